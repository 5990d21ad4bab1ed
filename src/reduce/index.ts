import type { Aliases } from './aliases.ts'
import { castValue, isValueType, VALUE_TYPES, type ValueType } from './cast.ts'
import { parseTimes, toDecimal, type Truncation } from './decimal.ts'
import { cut, quoted, ReduceError } from './errors.ts'
import { evaluatePath } from './path.ts'

export {
  aliasResolver,
  lookupWithAliases,
  withAliasTwins,
  type AliasFunction,
  type AliasMap,
  type Aliases,
  type AliasResolver,
} from './aliases.ts'
export {
  castValue,
  isValueType,
  VALUE_TYPES,
  type CastOptions,
  type CastResult,
  type ValueType,
} from './cast.ts'
export { Decimal, parseTimes, toBigInt, toDecimal, type Truncation } from './decimal.ts'
export { ReduceError, type ReduceErrorCode } from './errors.ts'
export { DEFAULT_PATH_MAX_VALUES, PathBudget } from './path-budget.ts'
export {
  evaluatePath,
  parseSimpleJsonPath,
  splitPath,
  type PathOptions,
  type Segment,
} from './path.ts'

export interface ReduceOptions {
  /** Path to the value; '' or '$' is the whole document. */
  path: string
  /** Cast the value (see castValue). Without a type the value is returned as found (or multiplied). */
  type?: ValueType | string
  /** Exact decimal multiplier. With an integer type: multiply then floor. Without a type: see reduce. */
  times?: unknown
  aliases?: Aliases
  separator?: string
  truncation?: Truncation
  /** Values the path's evaluation may visit and return (PATH_MAX_VALUES). */
  maxValues?: number
}

export type Reduced =
  bigint | boolean | string | number | null | readonly unknown[] | Readonly<Record<string, unknown>>

/**
 * The value at `path`, cast to `type` and scaled by `times`. Every error is a ReduceError whose
 * message names the path (`path $.data.x: no value`).
 * Without `type` but with `times`, the value is multiplied exactly and returned as a decimal string
 * (e.g. '144' or '1.5'): exact, and JSON-safe.
 */
export function reduce(json: unknown, options: ReduceOptions): Reduced {
  const { path } = options
  if (options.type !== undefined && !isValueType(options.type)) {
    throw new ReduceError(
      'BAD_TYPE',
      `unknown type ${quoted(options.type)} (expected one of ${VALUE_TYPES.join(', ')})`,
      path,
    )
  }
  const value = evaluatePath(json, path, {
    aliases: options.aliases,
    separator: options.separator,
    maxValues: options.maxValues,
  })
  try {
    if (options.type !== undefined)
      return castValue(value, options.type, {
        times: options.times,
        truncation: options.truncation,
      })
    if (options.times === undefined) return value as Reduced
    const decimal = toDecimal(value)
    if (decimal === undefined)
      throw new ReduceError(
        'CAST',
        `cannot multiply ${value === null ? 'null' : cut(JSON.stringify(value) ?? String(value))} by times`,
      )
    return decimal.times(parseTimes(options.times)).toFixed()
  } catch (error) {
    if (error instanceof ReduceError) throw error.withPath(path)
    throw error
  }
}
