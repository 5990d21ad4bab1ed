import { AdapterEndpoint } from '@chainlink/external-adapter-framework/adapter/index.js'
import type { Settings } from '../config/settings.ts'
import { catalogEntries, type CatalogEntry } from '../feeds/catalog/index.ts'
import { inputParametersFor } from './input-parameters.ts'
import {
  attachPrepared,
  cacheKeyOf,
  prepareRequest,
  preparedOf,
  type PreparedRequest,
} from './request.ts'
import { FeedTransport, type FeedTransportContext, type FeedTransportTypes } from './transport.ts'

export const ADAPTER_NAME = 'FEEDRUNNER'

/** One adapter endpoint per catalog entry: same name, the feed's parameters, the queue transport. */
export function createEndpoints(
  context: FeedTransportContext,
): AdapterEndpoint<FeedTransportTypes>[] {
  return catalogEntries.map((entry) => createEndpoint(entry, context))
}

/** Prepared requests by their raw data: a cache hit should not pay for validation again. */
const MEMO_LIMIT = 5_000

function createEndpoint(
  entry: CatalogEntry,
  context: FeedTransportContext,
): AdapterEndpoint<FeedTransportTypes> {
  const settings: Settings = context.settings
  const memo = new Map<string, { prepared: PreparedRequest; data: Record<string, unknown> }>()
  return new AdapterEndpoint<FeedTransportTypes>({
    name: entry.name,
    inputParameters: inputParametersFor(entry),
    transport: new FeedTransport(entry, context),
    customInputValidation: (req) => {
      const data = req.requestContext.data as Record<string, unknown>
      // Equal requests (the common case under load) are validated once; the key marker is part of
      // the memo key, so a client-key request never reuses a placeholder request's preparation.
      const raw = JSON.stringify(data)
      const known = memo.get(raw)
      if (known) {
        for (const name of Object.keys(data)) delete data[name]
        Object.assign(data, known.data)
        attachPrepared(data, known.prepared)
        return undefined
      }
      const prepared = prepareRequest(entry, data, settings.ALLOW_CLIENT_KEYS)
      if (!('entry' in prepared)) return prepared
      attachPrepared(data, prepared)
      if (memo.size >= MEMO_LIMIT) memo.clear()
      memo.set(raw, { prepared, data: { ...data } })
      return undefined
    },
    cacheKeyGenerator: (data) => cacheKeyOf(ADAPTER_NAME, preparedOf(data)),
  })
}
