import { createHash, randomUUID } from 'node:crypto'
import { AdapterInputError } from '@chainlink/external-adapter-framework/validation/error.js'
import type { CatalogEntry } from '../feeds/catalog/index.ts'
import { validateParams } from '../feeds/catalog/index.ts'
import {
  evaluatePath,
  isValueType,
  parseTimes,
  ReduceError,
  VALUE_TYPES,
  type ValueType,
} from '../reduce/index.ts'
import { isPlaceholder } from '../signkey/index.ts'
import { CLIENT_KEY_MARKER } from './client-keys.ts'
import { RESERVED_PARAMS, SIGN_KEY_PLACEHOLDER } from './input-parameters.ts'

export interface ReduceRequest {
  path?: string
  times?: string
  type?: ValueType
}

/** A request that passed validation: what to fetch (no key) and how to reduce the envelope. */
export interface PreparedRequest {
  readonly entry: CatalogEntry
  /** The feed's parameters, normalised by the catalog (defaults applied). */
  readonly params: Readonly<Record<string, string>>
  readonly reduce: ReduceRequest
  /** True when the client sent its own key (only with ALLOW_CLIENT_KEYS=true). */
  readonly withClientKey: boolean
}

/**
 * The prepared request rides on the validated data object under a symbol: the framework passes the
 * same object to the cache key generator and the transport, and symbols are left out of every
 * JSON rendering (logs, cache, metrics).
 */
const PREPARED = Symbol('feedrunner.prepared')

export function attachPrepared(data: object, prepared: PreparedRequest): void {
  Object.defineProperty(data, PREPARED, { value: prepared, enumerable: false })
}

export function preparedOf(data: unknown): PreparedRequest | undefined {
  if (data === null || typeof data !== 'object') return undefined
  return (data as { [PREPARED]?: PreparedRequest })[PREPARED]
}

/**
 * Validates a request's data against the catalog entry and the reserved parameters. Every problem
 * is a 400 that names the parameter; nothing has been queued yet. The key is checked, then removed
 * from `data` in place (the framework derives cache keys and metric labels from that object).
 */
export function prepareRequest(
  entry: CatalogEntry,
  data: Record<string, unknown>,
  allowClientKeys: boolean,
): PreparedRequest | AdapterInputError {
  const withClientKey = data.key === CLIENT_KEY_MARKER
  if (withClientKey && !allowClientKeys) {
    return inputError(
      'key',
      `only the ${SIGN_KEY_PLACEHOLDER} placeholder is accepted: the adapter fetches with the node's own key (an operator can set ALLOW_CLIENT_KEYS=true to let clients pass theirs)`,
    )
  }
  delete data.key
  // A placeholder is substituted in key only: elsewhere it would send a secret as data (and the
  // fetch worker refuses it after the job is queued).
  const misplaced = Object.entries(data).find(
    ([, value]) => typeof value === 'string' && isPlaceholder(value),
  )
  if (misplaced)
    return inputError(
      misplaced[0],
      `placeholders (${SIGN_KEY_PLACEHOLDER}, ##env:NAME) are substituted in key only`,
    )

  const validation = validateParams(entry, data)
  if (!validation.ok) {
    const first = validation.issues[0]
    return new AdapterInputError({
      statusCode: 400,
      message: `[Param: ${first?.param ?? 'unknown'}] ${validation.message}`,
    })
  }
  const reduce = prepareReduce(entry, data)
  if (reduce instanceof AdapterInputError) return reduce

  // Keep exactly the normalised values in the framework's data, so equal requests share a cache entry.
  for (const name of Object.keys(data))
    if (!(RESERVED_PARAMS as readonly string[]).includes(name)) delete data[name]
  Object.assign(data, validation.params)
  return { entry, params: validation.params, reduce, withClientKey }
}

function prepareReduce(
  entry: CatalogEntry,
  data: Record<string, unknown>,
): ReduceRequest | AdapterInputError {
  const reduce: ReduceRequest = {}
  const { path, times, type } = data
  if (path !== undefined && path !== null && path !== '') {
    if (typeof path !== 'string') return inputError('path', 'must be a string')
    const syntax = checkPathSyntax(path)
    if (syntax) return inputError('path', syntax)
    reduce.path = path
  }
  if (type !== undefined && type !== null && type !== '') {
    if (typeof type !== 'string' || !isValueType(type))
      return inputError('type', `must be one of ${VALUE_TYPES.join(', ')}`)
    reduce.type = type
  }
  if (times !== undefined && times !== null && times !== '') {
    if (typeof times !== 'string') return inputError('times', 'must be a decimal number')
    try {
      parseTimes(times)
    } catch (error) {
      return inputError(
        'times',
        error instanceof Error ? error.message : 'must be a decimal number',
      )
    }
    if (reduce.type !== undefined && reduce.type !== 'uint256' && reduce.type !== 'int256') {
      return inputError('times', `applies to uint256 and int256 only, not to ${reduce.type}`)
    }
    reduce.times = times
  }
  if (
    reduce.path === undefined &&
    entry.defaultResultPath === undefined &&
    (reduce.type !== undefined || reduce.times !== undefined)
  ) {
    return inputError(
      'path',
      `is required with times or type: ${entry.name} has no default result field`,
    )
  }
  return reduce
}

/** A syntax problem of `path`, found before anything is fetched (a missing value is found later). */
function checkPathSyntax(path: string): string | undefined {
  try {
    evaluatePath({}, path)
  } catch (error) {
    if (error instanceof ReduceError && error.code === 'BAD_PATH') return error.message
  }
  return undefined
}

function inputError(param: string, message: string): AdapterInputError {
  return new AdapterInputError({ statusCode: 400, message: `[Param: ${param}] ${message}` })
}

/**
 * The framework cache key of a prepared request: endpoint, normalised parameters and the reduction,
 * case kept (a path is case-sensitive; the framework's default key lowercases everything). A request
 * with a client key gets a key of its own that nothing is ever stored under.
 */
const cacheKeys = new WeakMap<PreparedRequest, string>()

export function cacheKeyOf(adapterName: string, prepared: PreparedRequest | undefined): string {
  if (!prepared || prepared.withClientKey) return `${adapterName}-uncached-${randomUUID()}`
  let key = cacheKeys.get(prepared)
  if (key === undefined) {
    key = computeCacheKey(adapterName, prepared)
    cacheKeys.set(prepared, key)
  }
  return key
}

function computeCacheKey(adapterName: string, prepared: PreparedRequest): string {
  const params = Object.entries(prepared.params).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const canonical = JSON.stringify([
    prepared.entry.name,
    params,
    prepared.reduce.path ?? null,
    prepared.reduce.times ?? null,
    prepared.reduce.type ?? null,
  ])
  return `${adapterName}-${prepared.entry.name}-${createHash('sha256').update(canonical).digest('hex').slice(0, 40)}`
}
