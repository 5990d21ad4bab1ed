import { releaseProcessMetrics } from '../metrics/registry.ts'
import type { AddressInfo } from 'node:net'
import { start } from '@chainlink/external-adapter-framework'
import { Adapter } from '@chainlink/external-adapter-framework/adapter/index.js'
import {
  LocalCache,
  RedisCache,
  type Cache,
} from '@chainlink/external-adapter-framework/cache/index.js'
import {
  AdapterConfig,
  type BaseAdapterSettings,
} from '@chainlink/external-adapter-framework/config/index.js'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { createLogger, type Logger } from '../config/logger.ts'
import type { Settings } from '../config/settings.ts'
import { Connections } from '../queue/connections.ts'
import { FetchQueueClient } from '../queue/fetch-queue.ts'
import { FailFastCache } from './cache.ts'
import { installBodyChecks } from './body-checks.ts'
import { installErrorBounds } from './error-bounds.ts'
import { frameworkLoggerFactory } from './framework-logger.ts'
import { installRequestPreparation } from './client-keys.ts'
import { FetchShares } from './fetch-shares.ts'
import { clientIdentity, trustedProxies } from './client-identity.ts'
import { ADAPTER_NAME, createEndpoints } from './endpoints.ts'
import type { DirectFetch } from './transport.ts'
import { DirectFetches } from './direct-fetches.ts'
import { clientKeyFetch } from './upstream.ts'
import { listenAddress } from '../net/listen-address.ts'

/**
 * Settings the framework reads that are secrets: marked sensitive so the framework's own censoring
 * covers them too (our logger also scrubs every secret value from every line).
 */
const customSettings = {
  FEED_API_KEY: {
    type: 'string',
    description: 'Key of the Data Feed Query Service (used by fetch workers)',
    sensitive: true,
  },
  NODE_PRIVATE_KEY: {
    type: 'string',
    description: 'Node key (signed ##signKey mode)',
    sensitive: true,
  },
} as const

export type FrameworkSettings = Partial<BaseAdapterSettings>

export interface AdapterOptions {
  settings: Settings
  logger?: Logger
  /**
   * Values for the EA framework's own settings (EA_PORT, CACHE_TYPE, METRICS_ENABLED, METRICS_PORT,
   * ...) used when the environment does not set them; the environment wins, as in any EA.
   */
  framework?: FrameworkSettings
  /** Fetch for requests that carry a client key (ALLOW_CLIENT_KEYS); default: the feeds client. */
  fetchWithClientKey?: DirectFetch
  /** The slots of the fetches with a client's key; default: ADAPTER_CLIENT_KEY_FETCHES of them. */
  directFetches?: DirectFetches
  /**
   * Adds routes to the adapter's server before it listens (the operator's /live, /ready and
   * dashboard: src/dashboard/mount.ts); what it returns is closed with the adapter.
   */
  mount?: (api: FastifyInstance, bind: { host: string }) => Promise<{ close(): Promise<void> }>
  /**
   * The process's connections (its composition root's); an adapter started without them opens and
   * closes its own.
   */
  connections?: Connections
  /** /metrics is served by `mount` on the adapter's port (the framework's own metrics server is off). */
  metricsServedElsewhere?: boolean
}

export interface CreatedAdapter {
  adapter: Adapter
  queue: FetchQueueClient
}

/**
 * The EA framework adapter with one endpoint per catalog entry. It opens the fetch queues (the
 * connections do not wait for Redis: until it answers, requests get 503).
 */
export function createAdapter(
  options: AdapterOptions & { connections: Connections },
): CreatedAdapter {
  const { settings } = options
  const logger = options.logger ?? createLogger(settings, 'adapter')
  const queue = FetchQueueClient.open(settings, options.connections)
  const config = new AdapterConfig(customSettings, {
    envDefaultOverrides: {
      EA_PORT: settings.EA_PORT,
      // Loopback unless EA_HOST says otherwise (the framework's own default is every interface).
      EA_HOST: settings.EA_HOST,
      LOG_LEVEL: settings.LOG_LEVEL,
      ...options.framework,
    },
  })
  const adapter = new Adapter({
    name: ADAPTER_NAME,
    endpoints: createEndpoints({
      settings,
      queue,
      logger,
      fetchWithClientKey: options.fetchWithClientKey ?? clientKeyFetch(settings),
      directFetches:
        options.directFetches ?? new DirectFetches(settings.ADAPTER_CLIENT_KEY_FETCHES),
      shares: new FetchShares(),
      clientOf: clientIdentity(trustedProxies(settings.ADAPTER_TRUSTED_PROXIES)),
    }),
    config,
  })
  // The framework looks endpoints up by the request's (lowercased) name in a plain object, so
  // "__proto__" and "constructor" found Object.prototype's members and the request failed with a 500;
  // without a prototype they are unknown endpoints (404) like any other name.
  Object.setPrototypeOf(adapter.endpointsMap, null)
  return { adapter, queue }
}

export interface RunningAdapter {
  adapter: Adapter
  /** Where this host reaches it: `http://127.0.0.1:<port>` when it listens on every interface. */
  url: string
  /** The address it listens on (EA_HOST): `http://0.0.0.0:<port>`, `http://127.0.0.1:<port>`. */
  listening: string
  /** Whether only this machine reaches the adapter and its metrics (EA_HOST is a loopback address). */
  loopback: boolean
  port: number
  /** Prometheus text, when metrics are enabled. */
  metricsUrl?: string
  /** The address the metrics server listens on, when it runs. */
  metricsListening?: string
  close(): Promise<void>
}

/**
 * Starts the adapter's HTTP server (POST / with `{"id", "data": {"endpoint", ...}}`) and, when
 * enabled, its metrics server. With CACHE_TYPE=redis the response cache lives in Redis
 * (CACHE_REDIS_URL, else REDIS_URL) and is shared by every replica.
 */
export async function startAdapter(options: AdapterOptions): Promise<RunningAdapter> {
  const logger = options.logger ?? createLogger(options.settings, 'adapter')
  const ownConnections = options.connections ? undefined : new Connections(options.settings, logger)
  const connections = options.connections ?? (ownConnections as Connections)
  const { adapter, queue } = createAdapter({ ...options, logger, connections })
  const frameworkSettings = adapter.config.settings
  const { cache, cacheClient } = responseCache(
    frameworkSettings,
    connections,
    options.settings,
    logger,
  )
  const dependencies = {
    cache,
    loggerFactory: frameworkLoggerFactory(logger, {
      metricsServedElsewhere: options.metricsServedElsewhere,
    }),
    ...(cacheClient ? { redisClient: cacheClient } : {}),
  }
  // A process that collected the process metrics already (a dev stack beside this adapter) hands them
  // to the framework, which registers its own when its metrics are on.
  if (frameworkSettings.METRICS_ENABLED) releaseProcessMetrics()
  const { api, metricsApi } = await start(adapter, dependencies)
  if (!api)
    throw new Error(
      `EA_MODE=${frameworkSettings.EA_MODE} serves no requests; feedrunner's adapter needs reader-writer or reader`,
    )
  installRequestBounds(api as unknown as FastifyInstance, frameworkSettings, logger)
  let mounted: { close(): Promise<void> } | undefined
  const closeAll = async () => {
    await api.close()
    await mounted?.close()
    await metricsApi?.close()
    await queue.close()
    cacheClient?.disconnect()
    await ownConnections?.close()
  }
  try {
    // What is mounted may refuse the bind address (the dashboard off loopback without a token).
    if (options.mount)
      mounted = await options.mount(api as unknown as FastifyInstance, {
        host: frameworkSettings.EA_HOST,
      })
    await api.listen({ port: frameworkSettings.EA_PORT, host: frameworkSettings.EA_HOST })
    if (metricsApi)
      await metricsApi.listen({
        port: frameworkSettings.METRICS_PORT,
        host: frameworkSettings.EA_HOST,
      })
  } catch (error) {
    await closeAll()
    throw error
  }
  await queue
    .waitUntilReady()
    .catch((error: unknown) =>
      logger.warn(
        { err: (error as Error).message },
        'Redis is not answering yet; requests get 503 until it does',
      ),
    )
  return {
    adapter,
    ...listeningAt(frameworkSettings.EA_HOST, api.server, metricsApi?.server),
    close: closeAll,
  }
}

type FrameworkConfig = Adapter['config']['settings']

/**
 * The framework's response cache, failing fast when its store is away: in Redis with CACHE_TYPE=redis
 * (CACHE_REDIS_URL, the framework's own setting, may name another Redis than REDIS_URL), else local.
 */
function responseCache(
  frameworkSettings: FrameworkConfig,
  connections: Connections,
  settings: Settings,
  logger: Logger,
): { cache: Cache; cacheClient?: Redis } {
  if (frameworkSettings.CACHE_TYPE !== 'redis')
    return { cache: new FailFastCache(new LocalCache(frameworkSettings.CACHE_MAX_ITEMS)) }
  const cacheConnections =
    frameworkSettings.CACHE_REDIS_URL === undefined
      ? connections
      : new Connections(
          { ...settings, REDIS_URL: frameworkSettings.CACHE_REDIS_URL },
          logger,
          // A cache of its own may evict, as caches do: an evicted answer is fetched again.
          { watchEviction: false },
        )
  if (cacheConnections !== connections)
    connections.onClose('adapter cache Redis', () => cacheConnections.close())
  const cacheClient = cacheConnections.redis('client', 'adapter cache', {
    enableAutoPipelining: true,
  })
  return {
    cache: new FailFastCache(new RedisCache(cacheClient, frameworkSettings.CACHE_MAX_ITEMS)),
    cacheClient,
  }
}

/** What a request must be before an endpoint sees it: its client key prepared, its body bounded. */
function installRequestBounds(
  api: FastifyInstance,
  frameworkSettings: FrameworkConfig,
  logger: Logger,
): void {
  installRequestPreparation(api)
  installBodyChecks(api, frameworkSettings.MAX_PAYLOAD_SIZE_LIMIT, logger)
  installErrorBounds(api)
}

/** Where the adapter and its metrics server listen, and how this host reaches them. */
function listeningAt(
  host: string,
  server: FastifyInstance['server'],
  metricsServer: FastifyInstance['server'] | undefined,
): Omit<RunningAdapter, 'adapter' | 'close'> {
  const port = (server.address() as AddressInfo).port
  const bound = listenAddress(host, port)
  const metricsBound =
    metricsServer === undefined
      ? undefined
      : listenAddress(host, (metricsServer.address() as AddressInfo).port)
  const metrics = metricsBound
    ? { metricsUrl: `${metricsBound.url}/metrics`, metricsListening: metricsBound.listening }
    : {}
  return { url: bound.url, listening: bound.listening, loopback: bound.loopback, port, ...metrics }
}
