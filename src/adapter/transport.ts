import type { Cache } from '@chainlink/external-adapter-framework/cache/index.js'
import type { ResponseCache } from '@chainlink/external-adapter-framework/cache/response.js'
import type { BaseAdapterSettings } from '@chainlink/external-adapter-framework/config/index.js'
import type {
  Transport,
  TransportDependencies,
} from '@chainlink/external-adapter-framework/transports/index.js'
import type {
  AdapterRequest,
  AdapterResponse,
} from '@chainlink/external-adapter-framework/util/index.js'
import type {
  InputParametersDefinition,
  TypeFromDefinition,
} from '@chainlink/external-adapter-framework/validation/input-params.js'
import type { Logger } from '../config/logger.ts'
import { secretScrubber } from '../config/secret-scrub.ts'
import { familyCacheTtlMs, type Settings } from '../config/settings.ts'
import type { CatalogEntry } from '../feeds/catalog/index.ts'
import type { FetchQueueClient } from '../queue/fetch-queue.ts'
import { FetchFailureError } from '../queue/fetch-worker.ts'
import { clientKeyOf } from './client-keys.ts'
import type { DirectFetches } from './direct-fetches.ts'
import type { ClientOf } from './client-identity.ts'
import type { FetchShares } from './fetch-shares.ts'
import { failureError, toAdapterError } from './errors.ts'
import { preparedOf, type PreparedRequest } from './request.ts'
import { buildResponse, type FeedResponseGenerics } from './response.ts'

export type FeedTransportTypes = {
  Parameters: InputParametersDefinition
  Response: FeedResponseGenerics
  Settings: BaseAdapterSettings
}

/** Fetches once, in this process, with a key the client sent; throws FetchFailureError. */
export type DirectFetch = (
  entry: CatalogEntry,
  params: Readonly<Record<string, string>>,
  clientKey: string,
) => Promise<Record<string, unknown>>

export interface FeedTransportContext {
  settings: Settings
  queue: FetchQueueClient
  fetchWithClientKey: DirectFetch
  /** The fair slots of the fetches made with a client's own key. */
  directFetches: DirectFetches
  logger: Logger
  /** The adapter's fair shares of the fetch queues between clients (one per adapter). */
  shares: FetchShares
  /** Who a request comes from, as the shares count it (a socket's address, or a trusted proxy's client). */
  clientOf: ClientOf
}

/**
 * The custom foreground transport of every feed endpoint (the framework's HttpTransport answers a
 * first request with 504 until its background loop has fetched; a bridge call needs the value now).
 * A cache miss enqueues the fetch on the family's queue, or joins the equal fetch already there,
 * and waits for it within ADAPTER_TIMEOUT_MS; the answer is cached for the family's TTL.
 * A request with a client key is fetched here, never queued and never cached. Queued fetches carry
 * their client's fair-share priority (fetch-shares.ts).
 */
export class FeedTransport implements Transport<FeedTransportTypes> {
  name = 'feed'
  responseCache!: ResponseCache<FeedTransportTypes>
  private cache!: Cache<AdapterResponse<FeedResponseGenerics>>

  constructor(
    private readonly entry: CatalogEntry,
    private readonly context: FeedTransportContext,
  ) {}

  async initialize(
    dependencies: TransportDependencies<FeedTransportTypes>,
    _settings: BaseAdapterSettings,
    _endpointName: string,
    transportName: string,
  ): Promise<void> {
    this.responseCache = dependencies.responseCache
    this.cache = dependencies.cache as Cache<AdapterResponse<FeedResponseGenerics>>
    this.name = transportName
  }

  async foregroundExecute(
    req: AdapterRequest<TypeFromDefinition<InputParametersDefinition>>,
  ): Promise<AdapterResponse<FeedResponseGenerics>> {
    const prepared = preparedOf(req.requestContext.data)
    if (!prepared) throw toAdapterError(this.entry.name, new Error('the request was not validated'))
    const requestedAt = Date.now()
    const clientKey = prepared.withClientKey ? clientKeyOf(req) : undefined
    const maxValues = this.context.settings.PATH_MAX_VALUES
    try {
      if (typeof clientKey === 'string')
        return buildResponse(
          prepared,
          await this.fetchDirect(prepared, clientKey),
          requestedAt,
          maxValues,
        )
      const response = buildResponse(
        prepared,
        await this.fetchQueued(prepared, this.context.clientOf(req)),
        requestedAt,
        maxValues,
      )
      await this.remember(req.requestContext.cacheKey, response)
      return response
    } catch (error) {
      throw toAdapterError(this.entry.name, error)
    }
  }

  private async fetchQueued(
    prepared: PreparedRequest,
    client: string,
  ): Promise<Record<string, unknown>> {
    const { settings, queue, shares } = this.context
    const share = shares.enter(client)
    try {
      const outcome = await queue.fetch(
        this.entry.family,
        { endpoint: this.entry.name, params: { ...prepared.params } },
        settings.ADAPTER_TIMEOUT_MS,
        share.priority,
      )
      if (!outcome.ok) throw failureError(this.entry.name, outcome.failure)
      return outcome.envelope
    } finally {
      share.leave()
    }
  }

  private async fetchDirect(
    prepared: PreparedRequest,
    clientKey: string,
  ): Promise<Record<string, unknown>> {
    try {
      const { directFetches, fetchWithClientKey, settings } = this.context
      return await directFetches.run(clientKey, settings.ADAPTER_TIMEOUT_MS, () =>
        fetchWithClientKey(this.entry, prepared.params, clientKey),
      )
    } catch (error) {
      if (!(error instanceof FetchFailureError)) throw error
      // The upstream may quote the key it refused, whole or in part, in any form: the client's key
      // goes no further than this.
      const message = secretScrubber([clientKey], { partial: true })(error.failure.message)
      throw failureError(this.entry.name, { ...error.failure, message, causes: [], attempts: 1 })
    }
  }

  /** Caches the answer for the family's TTL; a cache that cannot be written does not fail the request. */
  private async remember(
    cacheKey: string,
    response: AdapterResponse<FeedResponseGenerics>,
  ): Promise<void> {
    try {
      await this.cache.set(
        cacheKey,
        response,
        familyCacheTtlMs(this.context.settings, this.entry.family),
      )
    } catch (error) {
      this.context.logger.warn(
        { endpoint: this.entry.name, err: error instanceof Error ? error.message : String(error) },
        'could not cache the response',
      )
    }
  }
}
