import { Job, type QueueEvents } from 'bullmq'
import { FeedrunnerError } from '../config/errors.ts'
import type { Redis } from 'ioredis'
import type { FeedFamily, Settings } from '../config/settings.ts'
import { FEED_FAMILIES, familyCacheTtlMs } from '../config/settings.ts'
import { endpointOf } from '../config/settings.ts'
import { isRedisUnavailable } from './connection.ts'
import { createLogger } from '../config/logger.ts'
import { Connections } from './connections.ts'
import { createFetchQueue, createFetchQueueEvents, type FetchQueue } from './factories.ts'
import {
  decodeFetchFailure,
  fetchJobId,
  fetchJobResultSchema,
  type FetchFailure,
  type FetchJobData,
} from './fetch-job.ts'
import { fetchQueueName } from './names.ts'
import type { RedisClock } from './redis-clock.ts'

/**
 * A failed job is joined only this soon after it failed: requests that were on their way while the
 * last attempt failed share its answer; a later request tries again.
 */
const FAILED_JOIN_WINDOW_MS = 1_000

/** A fetch to queue: its data, its job id (the hash of the data) and its priority. */
interface QueuedFetch {
  data: FetchJobData
  jobId: string
  priority: number
}

export type FetchOutcome =
  | { ok: true; jobId: string; envelope: Record<string, unknown>; finishedAt?: number }
  | { ok: false; jobId: string; failure: FetchFailure }

/** Redis cannot be reached: nothing was queued; the caller should answer 503 at once. */
export class QueueUnavailableError extends FeedrunnerError {
  override readonly name = 'QueueUnavailableError'
  constructor(
    readonly reason: string,
    cause?: unknown,
  ) {
    super(
      `Redis is unavailable, so the fetch could not be queued (${reason}); retry when Redis is back`,
      { kind: 'unavailable', cause },
    )
  }
}

/** The fetch did not finish in time; `state` says where the job was (waiting: no worker took it). */
export class FetchWaitTimeoutError extends FeedrunnerError {
  override readonly name = 'FetchWaitTimeoutError'
  constructor(
    readonly family: FeedFamily,
    readonly jobId: string,
    readonly timeoutMs: number,
    readonly state: string,
  ) {
    super(
      `Timed out after ${timeoutMs} ms waiting for the ${family} fetch (queue ${fetchQueueName(family)}, job ${jobId}) to finish: ${describeState(state)}`,
      { kind: 'timeout' },
    )
  }
}

function describeState(state: string): string {
  switch (state) {
    case 'waiting':
    case 'prioritized':
      return 'no fetch worker has taken the job yet (is a `feedrunner worker` running, and the rate limit not exhausted?)'
    case 'active':
      return 'the feed service has not answered yet'
    case 'delayed':
      return 'the feed service failed and the job is waiting to be retried'
    default:
      return `job state ${state}`
  }
}

/**
 * The adapter's side of the fetch queues: enqueues a fetch or joins the equal one that is already
 * queued, running or just finished, and waits for its outcome. Equal requests in this process share
 * one wait; across processes they share the BullMQ job (its id is a hash of endpoint and params).
 */
export class FetchQueueClient {
  private readonly inflight = new Map<string, Promise<FetchOutcome>>()
  /** Ends every wait still pending, for close(). */
  private readonly pending = new Set<(error: Error) => void>()

  private constructor(
    private readonly settings: Settings,
    private readonly connection: Redis,
    private readonly eventsConnection: Redis,
    private readonly queues: ReadonlyMap<FeedFamily, FetchQueue>,
    private readonly events: ReadonlyMap<FeedFamily, QueueEvents>,
    private readonly clock: RedisClock,
  ) {}

  /**
   * Opens the queues and their event streams on connections from `connections` (which reports
   * outages); does not wait for Redis (requests get 503 until it answers).
   */
  static open(
    settings: Settings,
    connections: Connections = new Connections(settings, createLogger(settings, 'fetch-queue')),
  ): FetchQueueClient {
    const connection = connections.redis('client', 'fetch queues')
    const eventsConnection = connections.redis('worker', 'fetch queue events')
    const queues = new Map<FeedFamily, FetchQueue>()
    const events = new Map<FeedFamily, QueueEvents>()
    for (const family of FEED_FAMILIES) {
      const queue = createFetchQueue(settings, family, connection)
      queues.set(family, connections.watch(queue, `fetch queue ${family}`))
      const familyEvents = createFetchQueueEvents(settings, family, eventsConnection)
      events.set(family, connections.watch(familyEvents, `fetch queue events ${family}`))
    }
    const clock = connections.clock(settings.QUEUE_PREFIX)
    return new FetchQueueClient(settings, connection, eventsConnection, queues, events, clock)
  }

  /** Resolves when Redis answers and every event stream listens, or rejects after `timeoutMs`. */
  async waitUntilReady(timeoutMs = 5_000): Promise<void> {
    const ready = Promise.all(
      [...this.queues.values(), ...this.events.values()].map((item) => item.waitUntilReady()),
    )
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new QueueUnavailableError(
              `no answer from REDIS_URL ${endpointOf(this.settings.REDIS_URL)} within ${timeoutMs} ms`,
            ),
          ),
        timeoutMs,
      )
    })
    try {
      await Promise.race([ready, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** True while the connection used to enqueue is up. */
  get connected(): boolean {
    return this.connection.status === 'ready'
  }

  /**
   * The outcome of fetching `data`: from a job that already finished recently, from the job in
   * flight, or from a new job, added with `priority` (BullMQ's: lower runs first; the adapter's fair
   * shares, src/adapter/fetch-shares.ts). Throws QueueUnavailableError when Redis is away and
   * FetchWaitTimeoutError when no outcome arrives within `timeoutMs`.
   */
  fetch(
    family: FeedFamily,
    data: FetchJobData,
    timeoutMs: number,
    priority = 1,
  ): Promise<FetchOutcome> {
    const jobId = fetchJobId(data)
    const existing = this.inflight.get(jobId)
    if (existing) return existing
    const outcome = this.enqueueOrJoin(family, { data, jobId, priority }, timeoutMs).finally(() =>
      this.inflight.delete(jobId),
    )
    this.inflight.set(jobId, outcome)
    return outcome
  }

  private enqueueOrJoin(
    family: FeedFamily,
    job: QueuedFetch,
    timeoutMs: number,
  ): Promise<FetchOutcome> {
    const { jobId } = job
    if (!this.connected)
      return Promise.reject(new QueueUnavailableError(`connection ${this.connection.status}`))
    // Per-job events (`completed:<id>`) are not in BullMQ's typed event map.
    const events: NodeJS.EventEmitter = this.familyEvents(family)
    return new Promise<FetchOutcome>((resolve, reject) => {
      let settled = false
      const completedEvent = `completed:${jobId}`
      const failedEvent = `failed:${jobId}`
      const duplicatedEvent = `duplicated:${jobId}`
      const cleanup = () => {
        clearTimeout(timer)
        events.off(completedEvent, onCompleted)
        events.off(failedEvent, onFailed)
        events.off(duplicatedEvent, onDuplicated)
      }
      const settle = (outcome: FetchOutcome | Error) => {
        if (settled) return
        settled = true
        this.pending.delete(settle)
        cleanup()
        if (outcome instanceof Error) reject(outcome)
        else resolve(outcome)
      }
      this.pending.add(settle)
      const onCompleted = (args: { returnvalue?: unknown }) =>
        settle(completedOutcome(jobId, args.returnvalue))
      const onFailed = (args: { failedReason?: string }) =>
        settle({ ok: false, jobId, failure: decodeFetchFailure(args.failedReason ?? 'failed') })
      // Our add met a job with this id (added by another request, maybe finished already): look at it.
      let replaced = 0
      const onDuplicated = () => {
        void this.inspect(family, jobId)
          .then(async (found) => {
            if (found === 'stale' && replaced++ < 3) await this.replace(family, job)
            else if (found !== undefined && found !== 'stale') settle(found)
          })
          .catch(() => undefined)
      }
      const timer = setTimeout(() => {
        // A finish we did not hear about (events missed during a reconnection) still counts.
        void this.inspect(family, jobId)
          .catch(() => undefined)
          .then(async (found) => {
            if (found !== undefined && found !== 'stale') return settle(found)
            settle(
              new FetchWaitTimeoutError(
                family,
                jobId,
                timeoutMs,
                await this.jobState(family, jobId),
              ),
            )
          })
      }, timeoutMs)
      // Listen first, then add: a job that finishes in between is heard either way.
      events.on(completedEvent, onCompleted)
      events.on(failedEvent, onFailed)
      events.on(duplicatedEvent, onDuplicated)
      this.add(family, job).catch((error: unknown) => settle(toQueueError(error)))
    })
  }

  /**
   * Adds the job. When a job with this id exists, BullMQ keeps it and emits `duplicated`: the
   * caller then inspects it (one round trip on the common path, a new fetch).
   */
  private async add(family: FeedFamily, job: QueuedFetch): Promise<void> {
    await this.familyEvents(family).waitUntilReady()
    // Stamped with Redis's time, not this host's: the worker that takes it measures its wait by it.
    await this.queue(family).add(job.data.endpoint, job.data, {
      jobId: job.jobId,
      priority: job.priority,
      timestamp: this.clock.now(),
    })
  }

  /**
   * The outcome of an existing job when it finished recently enough to share (a completed one within
   * the family's cache TTL, a failed one within a second), 'stale' when it finished before that or
   * when its age is unknown, undefined while it is still waiting or running (its completion event will
   * come). The age is by Redis's clock at both ends: the worker that finished the job stamped it so.
   * BullMQ's finishedOn is the worker host's wall clock; a worker 300 s ahead made a failure look 300 s
   * younger, and every request for its query got the failure for five minutes.
   */
  private async inspect(
    family: FeedFamily,
    jobId: string,
  ): Promise<FetchOutcome | 'stale' | undefined> {
    const job = await Job.fromId(this.queue(family), jobId)
    const outcome = job ? finishedOutcome(job) : undefined
    if (!job || !outcome) return undefined
    const now = this.clock.now()
    const finishedAt = outcome.ok ? outcome.finishedAt : outcome.failure.finishedAt
    if (now === undefined || finishedAt === undefined) return 'stale'
    const window = outcome.ok ? familyCacheTtlMs(this.settings, family) : FAILED_JOIN_WINDOW_MS
    return now - finishedAt <= window ? outcome : 'stale'
  }

  /**
   * Replaces a stale finished job (BullMQ removes old jobs only when another one finishes). Another
   * request may replace it at the same moment; whichever job ends up with this id, we wait for it.
   */
  private async replace(family: FeedFamily, job: QueuedFetch): Promise<void> {
    const stale = await Job.fromId(this.queue(family), job.jobId)
    await stale?.remove().catch(() => undefined)
    await this.add(family, job)
  }

  private async jobState(family: FeedFamily, jobId: string): Promise<string> {
    try {
      return await this.queue(family).getJobState(jobId)
    } catch {
      return 'unknown (Redis did not answer)'
    }
  }

  private queue(family: FeedFamily): FetchQueue {
    const queue = this.queues.get(family)
    if (!queue) throw new Error(`no fetch queue for family ${family}`)
    return queue
  }

  private familyEvents(family: FeedFamily): QueueEvents {
    const events = this.events.get(family)
    if (!events) throw new Error(`no queue events for family ${family}`)
    return events
  }

  /** Stops listening and closes the connections; requests still waiting fail. */
  async close(): Promise<void> {
    for (const settle of [...this.pending])
      settle(new QueueUnavailableError('the adapter is shutting down'))
    await Promise.allSettled([...this.events.values()].map((events) => events.close()))
    await Promise.allSettled([...this.queues.values()].map((queue) => queue.close()))
    this.connection.disconnect()
    this.eventsConnection.disconnect()
  }
}

function completedOutcome(jobId: string, returnvalue: unknown): FetchOutcome {
  const parsed = fetchJobResultSchema.safeParse(returnvalue)
  if (parsed.success) {
    const { envelope, finishedAt } = parsed.data
    return { ok: true, jobId, envelope, ...(finishedAt !== undefined ? { finishedAt } : {}) }
  }
  return {
    ok: false,
    jobId,
    failure: {
      kind: 'internal',
      message: 'the fetch job returned no envelope',
      retryable: false,
      causes: [],
      attempts: 1,
    },
  }
}

/** The outcome of a job that has finished, or undefined while it is waiting, delayed or running. */
function finishedOutcome(job: Job): FetchOutcome | undefined {
  if (!job.finishedOn) return undefined
  const jobId = job.id ?? ''
  if (job.returnvalue !== null && job.returnvalue !== undefined)
    return completedOutcome(jobId, job.returnvalue)
  return { ok: false, jobId, failure: decodeFetchFailure(job.failedReason ?? 'failed') }
}

function toQueueError(error: unknown): Error {
  if (isRedisUnavailable(error)) return new QueueUnavailableError((error as Error).message, error)
  return error instanceof Error ? error : new Error(String(error))
}
