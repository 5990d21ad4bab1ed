import type { AdapterResponse } from '@chainlink/external-adapter-framework/util/index.js'
import { reduce, type Reduced } from '../reduce/index.ts'
import type { PreparedRequest } from './request.ts'

/**
 * The framework types `result` as string | number | null; a `type: bool` cast gives a JSON boolean,
 * which the framework passes through unchanged (a Chainlink node's jsonparse reads it as a bool).
 */
export type FeedResponseGenerics = { Data: Record<string, unknown>; Result: string | number | null }

/**
 * The adapter's answer: `result` is the value at `path` (or at the endpoint's default field) cast
 * and scaled as asked; `data` is the feed envelope (with `data` normalised: aliased fields carry their
 * canonical twins). Integers come back as decimal strings (exact for uint256).
 */
export function buildResponse(
  prepared: PreparedRequest,
  envelope: Record<string, unknown>,
  requestedAt: number,
  /** Values the path's evaluation may visit and return (PATH_MAX_VALUES). */
  maxValues: number,
): AdapterResponse<FeedResponseGenerics> {
  const { entry, reduce: options } = prepared
  const data = withoutKey(envelope)
  let value: Reduced = null
  if (options.path !== undefined) {
    value = reduce(data, {
      path: options.path,
      type: options.type,
      times: options.times,
      aliases: entry.aliases,
      maxValues,
    })
  } else if (entry.defaultResultPath !== undefined) {
    value = reduce(data.data ?? {}, {
      path: entry.defaultResultPath,
      type: options.type,
      times: options.times,
      aliases: entry.aliases,
      maxValues,
    })
  } else if (options.type !== undefined || options.times !== undefined) {
    value = reduce(data, { path: '$', type: options.type, times: options.times })
  }
  const timestamp = typeof data.timestamp === 'number' ? data.timestamp : undefined
  return {
    data,
    // JSON has no bigint; the framework's Result type has no boolean, which a `type: bool` cast gives.
    result: toJsonResult(value) as FeedResponseGenerics['Result'],
    statusCode: 200,
    timestamps: {
      providerDataRequestedUnixMs: requestedAt,
      providerDataReceivedUnixMs: Date.now(),
      providerIndicatedTimeUnixMs: timestamp,
    },
  }
}

function toJsonResult(value: Reduced): unknown {
  if (typeof value === 'bigint') return value.toString()
  return value
}

/** The envelope without any `key` in its echoed query (the service must not echo it; we make sure). */
function withoutKey(envelope: Record<string, unknown>): Record<string, unknown> {
  const query = envelope.query
  if (query === null || typeof query !== 'object' || !Object.hasOwn(query, 'key')) return envelope
  const { key: _key, ...rest } = query as Record<string, unknown>
  return { ...envelope, query: rest }
}
