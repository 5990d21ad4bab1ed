import { Queue, QueueEvents, Worker, type JobsOptions, type Processor } from 'bullmq'
import type { Redis } from 'ioredis'
import type { FeedFamily, Settings } from '../config/settings.ts'
import { familyCacheTtlMs, familyRateLimitPerSecond } from '../config/settings.ts'
import type { FetchJobData, FetchJobResult } from './fetch-job.ts'
import { fetchQueueName } from './names.ts'

export type FetchQueue = Queue<FetchJobData, FetchJobResult, string>
export type FetchWorker = Worker<FetchJobData, FetchJobResult, string>

/** Completed fetch jobs kept at most (each within its family's cache TTL, src/queue/fetch-sweep.ts). */
const MAX_KEPT_JOBS = 5_000

/**
 * How long an idle BullMQ worker blocks on its queue's marker before it looks again (its
 * `drainDelay`, in seconds). A job added and a stalled job put back each add a marker that wakes the
 * worker at once, and a retry's or a delayed job's marker carries its due time, which the worker then
 * waits for instead; so this bounds no one's wait: it is what an idle worker costs Redis. Each timeout is a blocking read and a fetch script, about 11 commands; at
 * BullMQ's 5 s the five workers of an installation (four fetch families and a chain's `requests`)
 * sent 7-8 commands a second of an idle installation's 20. After a reset connection the
 * worker takes the next job at once too (ioredis sends the wait again); BullMQ's own watchdog frees a
 * wait that hangs anyway after this long and a second.
 */
export const WORKER_IDLE_WAIT_SECONDS = 30

/**
 * A family's fetch queue, for callers that add jobs. `connection` is a `client` connection
 * (createRedisConnection): it fails fast while Redis is away instead of queueing commands. The
 * connection stays the caller's: close the queue, then the connection.
 */
export function createFetchQueue(
  settings: Settings,
  family: FeedFamily,
  connection: Redis,
): FetchQueue {
  return new Queue<FetchJobData, FetchJobResult, string>(fetchQueueName(family), {
    connection,
    prefix: settings.QUEUE_PREFIX,
    defaultJobOptions: fetchJobOptions(settings, family),
  })
}

/**
 * Completion events of a family's queue. `connection` must be a `worker` connection (blocking reads
 * need maxRetriesPerRequest null); BullMQ duplicates it and owns the duplicate.
 */
export function createFetchQueueEvents(
  settings: Settings,
  family: FeedFamily,
  connection: Redis,
): QueueEvents {
  const events = new QueueEvents(fetchQueueName(family), {
    connection,
    prefix: settings.QUEUE_PREFIX,
  })
  // Every waiting request listens for its job; many requests may wait at once.
  events.setMaxListeners(0)
  return events
}

/**
 * A family's fetch worker. The BullMQ limiter is kept in Redis, so `RATE_LIMIT_<FAMILY>_PER_SECOND`
 * holds for all workers of the family together, in every process.
 */
export function createFetchWorker(
  settings: Settings,
  family: FeedFamily,
  connection: Redis,
  processor: Processor<FetchJobData, FetchJobResult, string>,
): FetchWorker {
  return new Worker<FetchJobData, FetchJobResult, string>(fetchQueueName(family), processor, {
    connection,
    prefix: settings.QUEUE_PREFIX,
    concurrency: settings.FETCH_WORKER_CONCURRENCY,
    drainDelay: WORKER_IDLE_WAIT_SECONDS,
    limiter: { max: familyRateLimitPerSecond(settings, family), duration: 1_000 },
    // BullMQ renews a running job's lock every lockDuration / 2, so a short lock never cuts a slow
    // fetch short; it bounds how long the job of a killed worker waits before another worker takes it
    // (lock expiry + stalled check, about 9 s), well inside the adapter's wait. With the former 30 s
    // lock and BullMQ's 30 s stalled interval, the adapter answered 504 first (found by the crash test).
    lockDuration: 6_000,
    stalledInterval: 3_000,
  })
}

/**
 * Retries with exponential backoff (the worker makes 4xx answers unrecoverable, so only timeouts,
 * 5xx and connection errors are retried). A completed job is kept about as long as a cached answer
 * would be fresh: a request that comes while it is kept joins it instead of fetching again (and the
 * enqueuer replaces a kept job that is older than that, because BullMQ removes old jobs only when
 * another one finishes). Failed jobs are kept FETCH_FAILED_JOBS_KEPT at most, each for
 * FETCH_FAILED_JOBS_KEPT_SECONDS (the fetch workers sweep them: fetch-sweep.ts).
 */
export function fetchJobOptions(settings: Settings, family: FeedFamily): JobsOptions {
  return {
    attempts: settings.FETCH_ATTEMPTS,
    backoff: { type: 'exponential', delay: settings.FETCH_BACKOFF_MS },
    removeOnComplete: {
      age: Math.ceil(familyCacheTtlMs(settings, family) / 1_000),
      count: MAX_KEPT_JOBS,
    },
    removeOnFail: {
      age: settings.FETCH_FAILED_JOBS_KEPT_SECONDS,
      count: settings.FETCH_FAILED_JOBS_KEPT,
    },
  }
}
