import { AdapterEndpoint } from '@chainlink/external-adapter-framework/adapter/index.js'
import type { Settings } from '../config/settings.ts'
import { catalogEntries, type CatalogEntry } from '../feeds/catalog/index.ts'
import { inputParametersFor } from './input-parameters.ts'
import { attachPrepared, cacheKeyOf, prepareRequest, preparedOf } from './request.ts'
import { FeedTransport, type FeedTransportContext, type FeedTransportTypes } from './transport.ts'

export const ADAPTER_NAME = 'FEEDRUNNER'

/** One adapter endpoint per catalog entry: same name, the feed's parameters, the queue transport. */
export function createEndpoints(context: FeedTransportContext): AdapterEndpoint<FeedTransportTypes>[] {
  return catalogEntries.map((entry) => createEndpoint(entry, context))
}

function createEndpoint(entry: CatalogEntry, context: FeedTransportContext): AdapterEndpoint<FeedTransportTypes> {
  const settings: Settings = context.settings
  return new AdapterEndpoint<FeedTransportTypes>({
    name: entry.name,
    inputParameters: inputParametersFor(entry),
    transport: new FeedTransport(entry, context),
    customInputValidation: (req) => {
      const data = req.requestContext.data as Record<string, unknown>
      const prepared = prepareRequest(entry, data, settings.ALLOW_CLIENT_KEYS)
      if (!('entry' in prepared)) return prepared
      attachPrepared(data, prepared)
      return undefined
    },
    cacheKeyGenerator: (data) => cacheKeyOf(ADAPTER_NAME, preparedOf(data)),
  })
}
