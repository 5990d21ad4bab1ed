import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '../..')
const MAX_FILE_LINES = 400
const MAX_FUNCTION_LINES = 80

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return name.endsWith('.ts') ? [path] : []
  })
}

/** Every function, method, arrow function and accessor of a file, with its whole span in lines. */
function functionSpans(file: ts.SourceFile): Array<{ name: string; line: number; lines: number }> {
  const spans: Array<{ name: string; line: number; lines: number }> = []
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line
      const named = (node as { name?: ts.Node }).name
      spans.push({
        name: named ? named.getText(file) : '(anonymous)',
        line: start + 1,
        lines: end - start + 1,
      })
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return spans
}

/**
 * The project's size limits, counted by TypeScript's own parser over whole spans (comments and blank
 * lines included), where eslint's max-lines-per-function skips them: no file under src/ over 400
 * lines, no function over 80. A function over 80 lines says more than one thing: its design is what
 * changes (a class whose methods each do one thing, a list of named steps or parts, a table of cases),
 * not where its lines sit.
 */
describe('code size: src/ by the TypeScript parser', () => {
  const files = sourceFiles(join(ROOT, 'src'))

  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const long = files
      .map((path) => ({
        path: relative(ROOT, path),
        lines: readFileSync(path, 'utf8').split('\n').length,
      }))
      .filter(({ lines }) => lines > MAX_FILE_LINES)
    expect(long).toEqual([])
  })

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = files.flatMap((path) => {
      const text = readFileSync(path, 'utf8')
      const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true)
      return functionSpans(file)
        .filter(({ lines }) => lines > MAX_FUNCTION_LINES)
        .map(({ name, line, lines }) => `${relative(ROOT, path)}:${line} ${name} (${lines} lines)`)
    })
    expect(long).toEqual([])
  })
})
