import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const SRC = join(import.meta.dirname, '../../src')

/**
 * The modules from the top of the stack to the bottom (docs/architecture.md): a file may import from
 * its own module or any module below it, never from one above. Modules on one line are peers that do
 * not import each other.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['cli'],
  ['dev'],
  ['dashboard'],
  ['runner'],
  ['pipeline', 'adapter'],
  ['feeds'],
  ['chain'],
  ['queue'],
  ['health'],
  ['metrics'],
  ['net', 'reduce', 'signkey'],
  ['config'],
  ['types'],
]

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return name.endsWith('.ts') ? [path] : []
  })
}

/** Every relative module a file imports or re-exports, static or dynamic, resolved to its file. */
function importsOf(path: string): string[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
  const specifiers: string[] = []
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      specifiers.push(node.moduleSpecifier.text)
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    )
      specifiers.push(node.arguments[0].text)
    ts.forEachChild(node, visit)
  }
  visit(file)
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => resolve(dirname(path), specifier))
    .filter((target) => existsSync(target) && target.startsWith(SRC))
}

const moduleOf = (path: string) => relative(SRC, path).split('/')[0]!
const layerOf = (module: string) => LAYERS.findIndex((layer) => layer.includes(module))

/** The strongly connected components of more than one file (Tarjan): each is an import cycle. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const connect = (file: string): void => {
    index.set(file, next)
    low.set(file, next++)
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        connect(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!))
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(relative(SRC, member))
    } while (member !== file)
    if (component.length > 1) found.push(component.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) connect(file)
  return found
}

describe('the import graph of src/', () => {
  const graph = new Map(sourceFiles(SRC).map((path) => [path, importsOf(path)]))

  it('places every module in a layer', () => {
    const modules = new Set([...graph.keys()].map(moduleOf).filter((name) => !name.endsWith('.ts')))
    expect([...modules].filter((module) => layerOf(module) < 0)).toEqual([])
  })

  it('has no cycle, dynamic imports included', () => {
    expect(cycles(graph)).toEqual([])
  })

  it('imports only from the same module or one below it', () => {
    const upward = [...graph].flatMap(([from, targets]) =>
      targets
        .filter((target) => {
          const [a, b] = [moduleOf(from), moduleOf(target)]
          return a !== b && layerOf(a) >= layerOf(b)
        })
        .map((target) => `${relative(SRC, from)} -> ${relative(SRC, target)}`),
    )
    expect(upward).toEqual([])
  })
})
