import {
  aliasResolver,
  lookupWithAliases,
  withAliasTwins,
  type Aliases,
  type AliasResolver,
} from './aliases.ts'
import { quoted as quotedValue, ReduceError } from './errors.ts'
import { budgetedJsonPath, DEFAULT_PATH_MAX_VALUES, PathBudget } from './path-budget.ts'

/**
 * Path evaluation shared by the adapter (`path` parameter) and the pipeline (`jsonparse`).
 *
 * Three notations, told apart by their first character and content:
 * - JSONPath, starting with `$`: `$.data.x`, `$.data['x']`, `$.data.items[0]`. Simple paths (names and
 *   indices only) are walked here, so aliases resolve and `[-1]` means the last element. Anything else
 *   (`[*]`, `..`, slices such as `[-1:]`) goes to jsonpath-plus with script evaluation disabled (paths come
 *   from untrusted on-chain requests). One match gives that value (so `$.data.items[-1:]` gives the last
 *   element itself), several matches give an array of them, none is a NO_VALUE error.
 *   A general path runs under a budget of values visited and returned (path-budget.ts).
 * - Chainlink's separated form `data,x` (jsonparse): split on `separator` (default `,`).
 * - Dot form `data.x` (Airnode's `_path`): used when no separator is given and the path has no comma.
 *   A backslash escapes the separator inside a key (`a\.b` is the key "a.b").
 * In the separated and dot forms a segment applied to an array must be an integer; negative integers
 * count from the end (`items.-1` is the last element, `items.-2` the one before).
 * The empty path ('' or '$') is the whole document.
 */
export interface PathOptions {
  aliases?: Aliases
  /** Separator of the non-JSONPath form; default: ',' when the path contains one, else '.'. */
  separator?: string
  /**
   * Whether a path starting with `$` is JSONPath (the default). False reads every path as keys split
   * on the separator, as a Chainlink node's jsonparse does (`$` is then a key like any other).
   */
  jsonPath?: boolean
  /** Values one evaluation may visit and return (PATH_MAX_VALUES); default DEFAULT_PATH_MAX_VALUES. */
  maxValues?: number
}

export type Segment = string | number

const MAX_PATH_LENGTH = 1000

export function evaluatePath(json: unknown, path: string, options: PathOptions = {}): unknown {
  if (path.length > MAX_PATH_LENGTH)
    throw new ReduceError(
      'BAD_PATH',
      `longer than ${MAX_PATH_LENGTH} characters`,
      path.slice(0, 40) + '...',
    )
  const resolve = aliasResolver(options.aliases)
  const budget = new PathBudget(options.maxValues ?? DEFAULT_PATH_MAX_VALUES, path)
  if (path.startsWith('$') && options.jsonPath !== false) {
    const segments = parseSimpleJsonPath(path)
    if (segments !== undefined) return walk(json, segments, path, resolve, budget)
    return evaluateGeneralJsonPath(json, path, options.aliases && resolve, budget)
  }
  return walk(json, splitPath(path, options.separator), path, resolve, budget)
}

/** Splits a separated path (`data,x` or `data.x`), honouring backslash escapes. */
export function splitPath(path: string, separator?: string): Segment[] {
  if (path === '') return []
  const sep = separator ?? (path.includes(',') ? ',' : '.')
  if (sep === '') throw new ReduceError('BAD_PATH', 'the separator is empty', path)
  const segments: string[] = []
  let current = ''
  for (let i = 0; i < path.length; i++) {
    if (path[i] === '\\' && path.startsWith(sep, i + 1)) {
      current += sep
      i += sep.length
    } else if (path.startsWith(sep, i)) {
      segments.push(current)
      current = ''
      i += sep.length - 1
    } else {
      current += path[i]
    }
  }
  segments.push(current)
  return segments
}

const NAME = /^[A-Za-z_$][\w$-]*/
const INDEX = /^\[(-?\d+)\]/
const QUOTED = /^\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]/

/** Segments of a JSONPath made only of names and indices, or undefined for anything richer. */
export function parseSimpleJsonPath(path: string): Segment[] | undefined {
  const segments: Segment[] = []
  let rest = path.slice(1)
  while (rest.length > 0) {
    if (rest.startsWith('.') && !rest.startsWith('..')) {
      const name = NAME.exec(rest.slice(1))
      if (!name) return undefined
      segments.push(name[0])
      rest = rest.slice(1 + name[0].length)
      continue
    }
    const index = INDEX.exec(rest)
    if (index) {
      segments.push(Number(index[1]))
      rest = rest.slice(index[0].length)
      continue
    }
    const quoted = QUOTED.exec(rest)
    if (quoted) {
      segments.push((quoted[1] ?? quoted[2] ?? '').replace(/\\(.)/g, '$1'))
      rest = rest.slice(quoted[0].length)
      continue
    }
    return undefined
  }
  return segments
}

function walk(
  json: unknown,
  segments: readonly Segment[],
  path: string,
  resolve: AliasResolver,
  budget: PathBudget,
): unknown {
  let current: unknown = json
  for (const [position, segment] of segments.entries()) {
    budget.take()
    const where = describeSegment(segments, position)
    if (Array.isArray(current)) {
      current = elementAt(current, segment, path, where)
    } else if (current !== null && typeof current === 'object') {
      const found = lookupWithAliases(current as Record<string, unknown>, String(segment), resolve)
      if (!found.found) throw new ReduceError('NO_VALUE', `no value at ${where}`, path)
      current = found.value
    } else {
      throw new ReduceError(
        'WRONG_SHAPE',
        `no value at ${where} (${describeValue(current)} has no fields)`,
        path,
      )
    }
  }
  if (current === undefined) throw new ReduceError('NO_VALUE', 'no value', path)
  return current
}

function elementAt(
  array: readonly unknown[],
  segment: Segment,
  path: string,
  where: string,
): unknown {
  const text = String(segment)
  if (!/^-?\d+$/.test(text))
    throw new ReduceError(
      'WRONG_SHAPE',
      `no value at ${where} (an array needs an integer index)`,
      path,
    )
  const raw = Number(text)
  const index = raw < 0 ? array.length + raw : raw
  if (!Number.isSafeInteger(index) || index < 0 || index >= array.length) {
    throw new ReduceError(
      'NO_VALUE',
      `no value at ${where} (index ${raw} out of range, length ${array.length})`,
      path,
    )
  }
  return array[index]
}

function evaluateGeneralJsonPath(
  json: unknown,
  path: string,
  resolve: AliasResolver | undefined,
  budget: PathBudget,
): unknown {
  // With aliases, a copy in which each aliased field has its twin; its copying counts as visits.
  const view = resolve ? withAliasTwins(json, resolve, () => budget.take()) : json
  const matches = budgetedJsonPath(view, path, budget)
  if (matches.length === 0) throw new ReduceError('NO_VALUE', 'no value', path)
  return matches.length === 1 ? matches[0] : matches
}

function describeSegment(segments: readonly Segment[], position: number): string {
  return quotedValue(
    segments
      .slice(0, position + 1)
      .map(String)
      .join('.'),
  )
}

function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  return `a ${typeof value}`
}
