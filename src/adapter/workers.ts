import { createLogger, type Logger } from '../config/logger.ts'
import { secretScrubber } from '../config/secret-scrub.ts'
import { secretValues } from '../config/secrets.ts'
import {
  FEED_FAMILIES,
  familyBaseUrl,
  familyUrlSetting,
  type FeedFamily,
  type Settings,
} from '../config/settings.ts'
import { decodeFetchFailure, type FetchFailure } from '../queue/fetch-job.ts'
import { Connections } from '../queue/connections.ts'
import { createFetchWorker, type FetchWorker } from '../queue/factories.ts'
import { fetchProcessor, type FetchFunction } from '../queue/fetch-worker.ts'
import { sweepFetchJobs } from '../queue/fetch-sweep.ts'
import { fetchQueueName } from '../queue/names.ts'
import { REDIS_CHECK_OPTIONS } from '../health/checks.ts'
import { operateFetchWorkers } from '../health/operate.ts'
import { instrumentFetch, watchFetchConcurrency } from '../metrics/index.ts'
import { adaptConcurrency, FetchConcurrency } from '../queue/fetch-concurrency.ts'
import { queuedFetch } from './upstream.ts'

export interface FetchWorkersOptions {
  settings: Settings
  logger?: Logger
  /** Families to serve; default: every family whose `<FAMILY>_URL` is set. */
  families?: readonly FeedFamily[]
  /** The fetch to run; default: the feeds client with the node's key. */
  fetch?: FetchFunction
  /** The process's connections (its composition root's); workers started without them open their own. */
  connections?: Connections
}

export interface RunningFetchWorkers {
  readonly families: readonly FeedFamily[]
  readonly workers: readonly FetchWorker[]
  /** Finishes the fetches in flight, then stops. */
  close(): Promise<void>
}

/** The families this process can fetch: those with a base URL configured. */
export function configuredFamilies(settings: Settings): FeedFamily[] {
  return FEED_FAMILIES.filter(
    (family) => settings[`${family.toUpperCase()}_URL` as 'SPORTS_URL'] !== undefined,
  )
}

/**
 * Starts one fetch worker per family (`fetch-<family>` queues), each with the family's rate limit
 * (global across all workers), at most FETCH_WORKER_CONCURRENCY fetches at a time (fewer while the
 * fetches' times say this host is the bound: src/queue/fetch-concurrency.ts), and retries for
 * timeouts, 5xx and connection errors only.
 */
export async function startFetchWorkers(
  options: FetchWorkersOptions,
): Promise<RunningFetchWorkers> {
  const { settings } = options
  const logger = options.logger ?? createLogger(settings, 'fetch-worker')
  const families = options.families ?? configuredFamilies(settings)
  if (families.length === 0) {
    throw new Error(
      'No feed family to fetch: set at least one of SPORTS_URL, BLOCKCHAIN_URL, NFT_URL, WEATHER_URL',
    )
  }
  // Every call's latency and failure by family and status (feedrunner_fetch_*).
  const fetch = instrumentFetch(options.fetch ?? queuedFetch(settings))
  const scrub = secretScrubber(secretValues(settings))
  const ownConnections = options.connections ? undefined : new Connections(settings, logger)
  const connections = options.connections ?? (ownConnections as Connections)
  const connection = connections.redis('worker', 'fetch workers')
  const clock = connections.clock(settings.QUEUE_PREFIX)
  const workers = families.map((family) =>
    startFamilyWorker(family, {
      settings,
      connections,
      connection,
      processor: fetchProcessor(family, fetch, scrub, clock),
      logger,
    }),
  )
  // Finished jobs kept by count and age, not for ever.
  const sweeper = sweepFetchJobs(
    settings,
    families,
    connections.redis('client', 'fetch job sweep'),
    (queue, name) => connections.watch(queue, name),
  )
  // Readiness (Redis, workers running) and queue waiting times.
  const stopOperating = operateFetchWorkers(
    workers,
    connections.redis('client', 'health check', REDIS_CHECK_OPTIONS),
    clock,
  )
  logger.info(
    {
      families,
      queues: families.map(fetchQueueName),
      concurrency: settings.FETCH_WORKER_CONCURRENCY,
      minConcurrency: settings.FETCH_WORKER_MIN_CONCURRENCY,
    },
    'fetch workers started',
  )
  return {
    families,
    workers,
    async close() {
      await sweeper.stop()
      await stopOperating()
      await Promise.allSettled(workers.map((worker) => worker.close()))
      connection.disconnect()
      await ownConnections?.close()
    },
  }
}

/**
 * One family's worker, watched by the connections (Redis away is one line when it goes, one a minute,
 * one back) and reporting each fetch to the family's feed health.
 */
function startFamilyWorker(
  family: FeedFamily,
  parts: {
    settings: Settings
    connections: Connections
    connection: ReturnType<Connections['redis']>
    processor: ReturnType<typeof fetchProcessor>
    logger: Logger
  },
): FetchWorker {
  const { settings, connections } = parts
  const concurrency = new FetchConcurrency({
    min: settings.FETCH_WORKER_MIN_CONCURRENCY,
    max: settings.FETCH_WORKER_CONCURRENCY,
  })
  const processor = adaptConcurrency(parts.processor, concurrency, (limit) => {
    worker.concurrency = limit
  })
  const worker = createFetchWorker(settings, family, parts.connection, processor)
  const unwatch = watchFetchConcurrency(family, () => concurrency.limit)
  worker.on('closed', unwatch)
  // The feed service away: one line when it goes, one a minute with the failed calls, one back.
  const feedHealth = connections.dependency(
    `the ${family} feed service`,
    familyUrlSetting(family),
    familyBaseUrl(settings, family),
  )
  worker.on('completed', () => feedHealth.answered())
  worker.on('failed', (job, error) => {
    const failure = decodeFetchFailure(error.message)
    if (failure.kind === 'unavailable' || failure.kind === 'timeout') {
      feedHealth.failed(Object.assign(new Error(failure.message), { code: codeOf(failure) }))
      return
    }
    feedHealth.answered()
    // One line per failed attempt, its status and endpoint as fields: an upstream refusal is part
    // of the job, not a fault of feedrunner's, so no stack trace.
    parts.logger.warn(
      {
        queue: fetchQueueName(family),
        endpoint: job?.data.endpoint,
        ...(failure.providerStatus !== undefined ? { status: failure.providerStatus } : {}),
        kind: failure.kind,
        job: job?.id,
        attempt: job?.attemptsMade,
        retryable: failure.retryable,
        reason: failure.message,
      },
      'fetch failed',
    )
  })
  return connections.watch(worker, `fetch worker ${family}`)
}

/** The network code a failure's causes carry (ECONNREFUSED, ...), for the outage line. */
function codeOf(failure: FetchFailure): string | undefined {
  for (const cause of [failure, ...failure.causes]) {
    const code = /\b(E[A-Z]{3,}|UND_ERR_[A-Z_]+)\b/.exec(cause.message)?.[1]
    if (code) return code
  }
  return failure.kind === 'timeout' ? 'timeout' : undefined
}
