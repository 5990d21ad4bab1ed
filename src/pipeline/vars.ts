import { isPlainObject } from './values.ts'
import { errorKindOf, FeedrunnerError } from '../config/errors.ts'

/**
 * Run variables, as Chainlink's `Vars`: `jobSpec.*`, `jobRun.*`, and one entry per finished task
 * (its output, or its error). Keypaths are dot-separated; array elements by index.
 */
export type Vars = Record<string, unknown>

/** A variable a task reads is missing or failed: the request's data lacks it, so `bad_input`. */
export class VarError extends FeedrunnerError {
  override readonly name = 'VarError'
  constructor(message: string, options: { cause?: unknown } = {}) {
    const causeKind = errorKindOf(options.cause)
    super(message, { kind: causeKind === 'internal' ? 'bad_input' : causeKind, ...options })
  }
}

/** The value at a dot keypath, or a VarError naming the keypath. An errored task's var rethrows its error. */
export function getVar(vars: Vars, keypath: string): unknown {
  let current: unknown = vars
  for (const key of keypath.split('.')) {
    if (Array.isArray(current)) {
      const index = /^\d+$/.test(key) ? Number(key) : Number.NaN
      if (!(index < current.length)) throw new VarError(`$(${keypath}): index ${key} out of range`)
      current = current[index]
    } else if (isPlainObject(current)) {
      if (!Object.hasOwn(current, key))
        throw new VarError(`$(${keypath}): no ${JSON.stringify(key)} here`)
      current = current[key]
    } else {
      throw new VarError(
        `$(${keypath}): cannot look up ${JSON.stringify(key)} in a ${current === null ? 'null' : typeof current}`,
      )
    }
    if (current instanceof Error)
      throw new VarError(`$(${keypath}): ${current.message}`, { cause: current })
  }
  return current
}

/** `jobRun` variables of the roots of the request's block, read from the chain only when a job uses them. */
export const BLOCK_ROOT_VARIABLES = [
  'blockReceiptsRoot',
  'blockTransactionsRoot',
  'blockStateRoot',
] as const

/** Whether any attribute of the tasks reads a block root. */
export function readsBlockRoots(attributes: Iterable<Readonly<Record<string, string>>>): boolean {
  for (const taskAttributes of attributes)
    for (const text of Object.values(taskAttributes))
      for (const keypath of referencedKeypaths(text))
        if (BLOCK_ROOT_VARIABLES.some((name) => keypath === `jobRun.${name}`)) return true
  return false
}

/** A `$(keypath)` reference, spaces allowed inside the parentheses: Chainlink's variableRegexp. */
const VARIABLE = /\$\(\s*([a-zA-Z0-9_.]+)\s*\)/g

/** The keypath when the whole attribute is one `$(keypath)`, as Chainlink's VarExpr decides. */
export function wholeVarExpression(text: string): string | undefined {
  const trimmed = text.trim()
  if (trimmed.split('$').length !== 2 || !trimmed.startsWith('$(') || !trimmed.endsWith(')'))
    return undefined
  const keypath = trimmed.slice(2, -1).trim()
  return keypath === '' ? undefined : keypath
}

/** Every keypath referenced with `$(...)` in an attribute. */
export function referencedKeypaths(text: string): string[] {
  return [...text.matchAll(VARIABLE)].map((match) => match[1] ?? '')
}

/** The text with each `$(keypath)` replaced by what `replacement` gives for its keypath. */
export function replaceVariables(text: string, replacement: (keypath: string) => string): string {
  return text.replace(VARIABLE, (_whole, keypath: string) => replacement(keypath))
}

const PLACEHOLDER_KEY = '__feedrunner_var_expr__'

/**
 * A JSON attribute (requestData, ethabiencode data, values) in which each `$(keypath)` stands for the
 * typed value itself, unquoted, as Chainlink's JSONWithVarExprs: `{"id": $(jobSpec.externalJobID)}`.
 */
export function jsonWithVarExpressions(text: string, vars: Vars, tolerateErrors = false): unknown {
  return substitute(markedTemplate(text), vars, tolerateErrors)
}

/**
 * Attribute texts parsed with their variables marked, by text: a spec's attributes are parsed for
 * every run, and substitute() builds new values without touching the template. Bounded, as texts
 * come from the loaded specs.
 */
const templates = new Map<string, unknown>()
const MAX_TEMPLATES = 512

function markedTemplate(text: string): unknown {
  if (templates.has(text)) return templates.get(text)
  const marked = replaceVariables(text, (keypath) => JSON.stringify({ [PLACEHOLDER_KEY]: keypath }))
  let parsed: unknown
  try {
    parsed = JSON.parse(marked)
  } catch (error) {
    throw new VarError(`not valid JSON once variables are marked (${(error as Error).message})`)
  }
  if (templates.size < MAX_TEMPLATES) templates.set(text, parsed)
  return parsed
}

/** With `tolerateErrors` (median's `values`), a failed or missing variable becomes an Error entry. */
function substitute(value: unknown, vars: Vars, tolerateErrors: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => substitute(item, vars, tolerateErrors))
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
    if (keys.length === 1 && keys[0] === PLACEHOLDER_KEY)
      return lookup(vars, String(value[PLACEHOLDER_KEY]), tolerateErrors)
    return Object.fromEntries(
      keys.map((key) => [key, substitute(value[key], vars, tolerateErrors)]),
    )
  }
  return value
}

function lookup(vars: Vars, keypath: string, tolerateErrors: boolean): unknown {
  try {
    return getVar(vars, keypath)
  } catch (error) {
    if (tolerateErrors && error instanceof VarError) return error
    throw error
  }
}
