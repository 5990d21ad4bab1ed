import parseDot, { type Attr, type Stmt } from 'dotparser'
import { escapeRegExp } from '../regexp.ts'

/**
 * The DOT `observationSource` as tasks and edges, each with the line where it is written.
 * dotparser gives no positions, so lines are found by searching the source for each statement
 * (good enough to point a person at the place; `lineOffset` maps DOT lines to TOML file lines).
 */
export interface DotTask {
  id: string
  attributes: Record<string, string>
  /** Attribute name -> line, for messages about one attribute. */
  attributeLines: Record<string, number>
  line: number
  /** Declared with attributes (a node statement), not only named in an edge. */
  declared: boolean
  duplicateAttributes: string[]
}

export interface DotEdge {
  from: string
  to: string
  line: number
}

export type DotParse =
  | {
      ok: true
      tasks: DotTask[]
      edges: DotEdge[]
      unsupported: { line: number; message: string }[]
    }
  | { ok: false; line: number; message: string }

export function parseObservationSource(source: string, lineOffset: number): DotParse {
  // Wrapped as Chainlink does; the wrapper line is line 0, so DOT line n is source line n. Bare
  // numerals are quoted first: dotparser hands them over as JS numbers (`times=1.50` would become
  // 1.5, `x=.5` 0.5), where Chainlink's parser keeps the text as written.
  const wrapped = `digraph {\n${quoteBareNumerals(source)}\n}`
  let statements: Stmt[]
  try {
    const graphs = parseDot(wrapped)
    statements = graphs[0]?.children ?? []
  } catch (error) {
    const location = (error as { location?: { start?: { line?: number } } }).location
    // Line 1 of the wrapped text is the `digraph {` added above.
    const line = (location?.start?.line ?? 2) - 2
    return {
      ok: false,
      line: lineOffset + Math.max(line, 0),
      message: `observationSource is not valid DOT: ${(error as Error).message}`,
    }
  }
  return { ok: true, ...readStatements(statements, new Locator(source, lineOffset), lineOffset) }
}

/** The tasks (declared, or named by an edge only), edges and unsupported statements of the graph. */
function readStatements(
  statements: Stmt[],
  locator: Locator,
  lineOffset: number,
): Omit<Extract<DotParse, { ok: true }>, 'ok'> {
  const tasks = new Map<string, DotTask>()
  const edges: DotEdge[] = []
  const unsupported: { line: number; message: string }[] = []
  const taskFor = (id: string, declared: boolean): DotTask => {
    let task = tasks.get(id)
    if (!task) {
      task = {
        id,
        attributes: {},
        attributeLines: {},
        line: declared ? locator.nodeLine(id) : locator.edgeLine(id),
        declared,
        duplicateAttributes: [],
      }
      tasks.set(id, task)
    }
    if (declared && !task.declared) {
      task.declared = true
      task.line = locator.nodeLine(id)
    }
    return task
  }
  for (const statement of statements) {
    if (statement.type === 'node_stmt') {
      addAttributes(taskFor(String(statement.node_id.id), true), statement.attr_list, locator)
    } else if (statement.type === 'edge_stmt') {
      const ids: string[] = []
      for (const item of statement.edge_list) {
        if (item.type !== 'node_id') {
          unsupported.push({
            line: locator.lineOf(0),
            message: 'subgraphs are not supported in edges',
          })
          continue
        }
        ids.push(String(item.id))
      }
      for (let i = 0; i + 1 < ids.length; i++) {
        const from = ids[i]!
        const to = ids[i + 1]!
        taskFor(from, false)
        taskFor(to, false)
        edges.push({ from, to, line: locator.edgeLine(from, to) })
      }
    } else {
      unsupported.push({
        line: lineOffset,
        message: `${statement.type} statements are not supported in observationSource`,
      })
    }
  }
  return { tasks: [...tasks.values()], edges, unsupported }
}

function addAttributes(task: DotTask, attributes: readonly Attr[], locator: Locator): void {
  for (const attr of attributes) {
    const name = String(attr.id)
    if (Object.hasOwn(task.attributes, name)) task.duplicateAttributes.push(name)
    // Defined, not assigned: `__proto__="x"` is an attribute like any other (and so refused as
    // unknown), not a write to the object's prototype that drops it without a word.
    ownProperty(task.attributes, name, attributeText(attr))
    ownProperty(task.attributeLines, name, locator.attributeLine(task.line, name))
  }
}

/**
 * An attribute's text as Chainlink reads it: a quoted string unquoted, a `<...>` string without its
 * brackets, a bare word or numeral as written; `[flag]` without a value (DOT allows it) reads as ''.
 */
function attributeText(attr: Attr): string {
  const eq = attr.eq as Attr['eq'] | number | null | undefined
  if (eq === null || eq === undefined) return ''
  if (typeof eq === 'string') return eq
  if (typeof eq === 'number') return String(eq)
  return String(eq.value)
}

/** A DOT numeral (`100`, `-2.5`, `.5`, `1.`) not followed by more of an ID. */
const NUMERAL = /-?(?:\.\d+|\d+(?:\.\d*)?)(?![\w.])/y

/**
 * The DOT text with every bare numeral after `=` put in quotes, which DOT reads as the same ID, so
 * the parser keeps its digits. Quoted strings, `<...>` strings and comments are passed over as they
 * are; no line changes.
 */
export function quoteBareNumerals(source: string): string {
  let out = ''
  let at = 0
  while (at < source.length) {
    const char = source[at]!
    const skipped = skipOpaque(source, at)
    if (skipped > at) {
      out += source.slice(at, skipped)
      at = skipped
      continue
    }
    out += char
    at++
    if (char !== '=') continue
    const value = skipSpaceAndComments(source, at)
    out += source.slice(at, value)
    at = value
    NUMERAL.lastIndex = at
    const numeral = NUMERAL.exec(source)
    if (numeral) {
      out += `"${numeral[0]}"`
      at += numeral[0].length
    }
  }
  return out
}

/**
 * The first index from `at` that is neither whitespace nor in a comment: DOT allows a comment
 * between `=` and its value, and the numeral after that comment is still the value.
 */
function skipSpaceAndComments(source: string, at: number): number {
  for (;;) {
    while (at < source.length && /[ \t\r\n]/.test(source[at]!)) at++
    const end = skipComment(source, at)
    if (end === at) return at
    at = end
  }
}

/** The end of a quoted string, `<...>` string or comment starting at `at`, or `at` when none starts there. */
function skipOpaque(source: string, at: number): number {
  const char = source[at]
  if (char === '"') {
    let end = at + 1
    while (end < source.length && source[end] !== '"') end += source[end] === '\\' ? 2 : 1
    return Math.min(end + 1, source.length)
  }
  if (char === '<') {
    let depth = 0
    let end = at
    do {
      if (source[end] === '<') depth++
      else if (source[end] === '>') depth--
      end++
    } while (end < source.length && depth > 0)
    return end
  }
  return skipComment(source, at)
}

/** The end of a comment starting at `at`, or `at` when none starts there. */
function skipComment(source: string, at: number): number {
  if (source.startsWith('//', at) || source[at] === '#') {
    const newline = source.indexOf('\n', at)
    return newline === -1 ? source.length : newline
  }
  if (source.startsWith('/*', at)) {
    const close = source.indexOf('*/', at + 2)
    return close === -1 ? source.length : close + 2
  }
  return at
}

class Locator {
  private readonly lineStarts: number[] = [0]
  constructor(
    private readonly source: string,
    private readonly lineOffset: number,
  ) {
    for (let i = 0; i < source.length; i++) if (source[i] === '\n') this.lineStarts.push(i + 1)
  }

  lineOf(index: number): number {
    let line = 0
    while (line + 1 < this.lineStarts.length && this.lineStarts[line + 1]! <= index) line++
    return this.lineOffset + line
  }

  nodeLine(id: string): number {
    const match = new RegExp(`(^|[\\s;{])"?${escapeRegExp(id)}"?\\s*\\[`, 'm').exec(this.source)
    return this.lineOf(match ? match.index + match[1]!.length : 0)
  }

  edgeLine(from: string, to?: string): number {
    const pattern =
      to === undefined
        ? `"?${escapeRegExp(from)}"?\\s*->|->\\s*"?${escapeRegExp(from)}"?`
        : `"?${escapeRegExp(from)}"?\\s*->\\s*"?${escapeRegExp(to)}"?(?![\\w"])`
    const match = new RegExp(pattern).exec(this.source)
    return this.lineOf(match ? match.index : 0)
  }

  attributeLine(nodeLine: number, name: string): number {
    const start = this.lineStarts[nodeLine - this.lineOffset] ?? 0
    const match = new RegExp(`(^|[\\s\\[,;])${escapeRegExp(name)}\\s*=`, 'm').exec(
      this.source.slice(start),
    )
    return this.lineOf(match ? start + match.index + match[1]!.length : start)
  }
}

function ownProperty<T>(record: Record<string, T>, name: string, value: T): void {
  Object.defineProperty(record, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })
}
