import { randomUUID } from 'node:crypto'
import { rootCauseFirst, isRetryable, errorKindOf } from '../../config/errors.ts'
import type { Logger } from '../../config/logger.ts'
import type { OracleRequestEvent } from '../../chain/operator.ts'
import { fromRequestPayload, requestJobId, toRequestPayload } from '../request-payload.ts'
import { isRedisUnavailable } from '../../queue/connection.ts'
import type { HeldLease, LeaseStore } from './lease-store.ts'

/** How one delivery of a request is run: `runRequest` with the worker's options (src/runner/work-part.ts). */
export type DirectRun = (
  request: OracleRequestEvent,
  delivery: { retryTransient: boolean; retried: boolean },
) => Promise<unknown>

export interface DirectRunsOptions {
  store: LeaseStore
  /** A lease lasts this long unrenewed (RUNNER_LOCK_MS, as the `requests` worker's lock did). */
  leaseMs: number
  /** Runs at once: the pipeline worker's current concurrency. */
  concurrency: () => number
  /** Leases held at once, running or waiting for a slot, per unit of concurrency; beyond, the queue. */
  heldPerSlot?: number
  /** Deliveries of a request at most, and the first retry's delay (the `requests` job's attempts/backoff). */
  attempts: number
  backoffMs: number
  /** How often due leases are looked for (jittered; at most 1 s). */
  sweepMs?: number
  run: DirectRun
  /** A run starts, held since `heldAt` (epoch ms): the queue-wait metric of the `requests` queue. */
  onStart?: (heldAt: number) => void
  /** The job's name for a log line about a run (the registry knows it by spec id). */
  jobName: (request: OracleRequestEvent) => string
  log: Logger
}

export type ClaimOutcome = 'claimed' | 'elsewhere' | 'full'

/** One lease this process holds, and where its run is. */
interface Holding extends HeldLease {
  request: OracleRequestEvent
  /** When this process took it (epoch ms): its wait for a slot counts from here. */
  heldAt: number
}

/**
 * Runs requests in the process that saw them, under a lease in Redis (LeaseStore), instead of a
 * `requests` BullMQ job: issue 20's target of 40 Redis commands a request. A run that fails
 * retryably goes back with a not-before time, like the job's backoff; a lease whose process died
 * expires and is taken over by any process's sweep, like BullMQ's stalled check; on close, leases not
 * started yet are handed back so another runner takes them at once.
 */
export class DirectRuns {
  private readonly process = randomUUID().slice(0, 12)
  private claims = 0
  private sweeps = 0
  private readonly holdings = new Map<string, Holding>()
  private readonly queue: Holding[] = []
  private running = 0
  private closing = false
  private readonly runsEnded = new Set<() => void>()
  private renewTimer: NodeJS.Timeout | undefined
  private sweepTimer: NodeJS.Timeout | undefined
  private renewing: Promise<void> | undefined
  private sweeping: Promise<void> | undefined

  constructor(private readonly options: DirectRunsOptions) {}

  /** Leases this process holds: running, and waiting for a slot (since when, the oldest). */
  stats(): { running: number; waiting: number; oldestWaitingSince?: number } {
    return {
      running: this.running,
      waiting: this.queue.length,
      ...(this.queue[0] ? { oldestWaitingSince: this.queue[0].heldAt } : {}),
    }
  }

  private get maxHeld(): number {
    return Math.max(1, this.options.concurrency()) * (this.options.heldPerSlot ?? 16)
  }

  /**
   * Claims a confirmed request and runs it here: `elsewhere` when some process holds it already (a
   * second delivery), `full` when this process holds as many as it should (the caller queues it).
   */
  async claim(event: OracleRequestEvent): Promise<ClaimOutcome> {
    if (this.closing || this.holdings.size >= this.maxHeld) return 'full'
    const jobId = requestJobId(event.chainId, event.operator, event.requestId)
    const token = `${this.process}:${++this.claims}`
    const payload = JSON.stringify(toRequestPayload(event))
    const claimed = await this.options.store.claim(
      jobId,
      token,
      Date.now() + this.options.leaseMs,
      payload,
    )
    if (!claimed) return 'elsewhere'
    this.hold({ jobId, token, payload, attemptsMade: 0, stalled: false }, event)
    return 'claimed'
  }

  /** A cancelled request: a run not started here, or waiting for another try anywhere, goes. */
  async cancel(jobId: string): Promise<void> {
    const index = this.queue.findIndex((holding) => holding.jobId === jobId)
    if (index >= 0) {
      const [holding] = this.queue.splice(index, 1)
      this.holdings.delete(holding!.token)
      await this.options.store.finish(jobId, holding!.token)
    }
    await this.options.store.dropWaiting(jobId)
  }

  start(): void {
    const every = Math.max(100, Math.floor(this.options.leaseMs / 3))
    this.renewTimer = setInterval(() => {
      this.renewing ??= this.renew().finally(() => (this.renewing = undefined))
    }, every)
    this.renewTimer.unref()
    this.scheduleSweep()
  }

  /**
   * Stops taking work, hands back the leases not started (another runner takes them at once), and
   * waits for the runs in progress, as the worker's close does.
   */
  async close(): Promise<void> {
    this.closing = true
    clearTimeout(this.sweepTimer)
    await this.sweeping
    const handBack = this.queue.splice(0)
    await Promise.all(
      handBack.map(async (holding) => {
        this.holdings.delete(holding.token)
        await this.options.store
          .putBack(holding, Date.now(), holding.attemptsMade)
          .catch((error: unknown) => this.storeFailed('hand back', holding, error))
      }),
    )
    while (this.running > 0) await new Promise<void>((resolve) => this.runsEnded.add(resolve))
    clearInterval(this.renewTimer)
    await this.renewing
  }

  private hold(lease: HeldLease, request: OracleRequestEvent): void {
    const holding: Holding = { ...lease, request, heldAt: Date.now() }
    this.holdings.set(holding.token, holding)
    this.queue.push(holding)
    this.pump()
  }

  private pump(): void {
    while (!this.closing && this.running < Math.max(1, this.options.concurrency())) {
      const holding = this.queue.shift()
      if (!holding) return
      this.running++
      this.options.onStart?.(holding.heldAt)
      void this.runOne(holding).finally(() => {
        this.running--
        this.holdings.delete(holding.token)
        for (const ended of this.runsEnded) ended()
        this.runsEnded.clear()
        this.pump()
      })
    }
  }

  /** One delivery; its end removes the lease, or puts the run back for a later try. */
  private async runOne(holding: Holding): Promise<void> {
    const { attempts, backoffMs } = this.options
    const lastAttempt = holding.attemptsMade + 1 >= attempts
    try {
      await this.options.run(holding.request, {
        retryTransient: !lastAttempt,
        retried: holding.attemptsMade > 0 || holding.stalled,
      })
    } catch (error) {
      this.runFailed(holding, error, lastAttempt)
      if (!lastAttempt) {
        // Exponential as BullMQ's backoff: 1, 2, 4, ... s after the first, second, third failure.
        const notBefore = Date.now() + backoffMs * 2 ** holding.attemptsMade
        await this.options.store
          .putBack(holding, notBefore, holding.attemptsMade + 1)
          .catch((putBackError: unknown) => this.storeFailed('put back', holding, putBackError))
        return
      }
    }
    // A lease this process could not remove expires, and whoever takes it finds the run final.
    await this.options.store
      .finish(holding.jobId, holding.token)
      .catch((error: unknown) => this.storeFailed('finish', holding, error))
  }

  /**
   * As the worker told a failed job: a debug line while it will be tried again, an error at its end.
   * A Redis away is reported once by its connection, not by every run it failed (outage lines).
   */
  private runFailed(holding: Holding, error: unknown, lastAttempt: boolean): void {
    const willRetry = (!lastAttempt && isRetryable(error)) || isRedisUnavailable(error)
    this.options.log[willRetry ? 'debug' : 'error'](
      {
        requestId: holding.request.requestId,
        job: this.options.jobName(holding.request),
        jobId: holding.jobId,
        kind: errorKindOf(error),
        err: rootCauseFirst(error),
      },
      'request run failed',
    )
  }

  /** Redis away as a lease ends: its expiry hands the run to whichever process sweeps next. */
  private storeFailed(what: string, holding: Holding, error: unknown): void {
    this.options.log.debug(
      { requestId: holding.request.requestId, err: rootCauseFirst(error) },
      `could not ${what} the run's lease: it expires and is taken over`,
    )
  }

  /** Every lease held here, renewed at once; one no longer ours stays with whoever has it. */
  private async renew(): Promise<void> {
    const held = [...this.holdings.values()]
    if (held.length === 0) return
    try {
      const lost = new Set(await this.options.store.renew(held, Date.now() + this.options.leaseMs))
      if (lost.size === 0) return
      // Not started yet: another process has it (taken over while this one stalled) or Redis lost it
      // (recovery delivers it again); one running goes on to its end either way.
      for (let at = this.queue.length - 1; at >= 0; at--)
        if (lost.has(this.queue[at]!.jobId))
          this.holdings.delete(this.queue.splice(at, 1)[0]!.token)
    } catch (error) {
      this.options.log.debug({ err: rootCauseFirst(error) }, 'could not renew the leases')
    }
  }

  private scheduleSweep(): void {
    if (this.closing) return
    const every = Math.min(1_000, this.options.sweepMs ?? 1_000)
    // Jittered, so processes that started together do not sweep together.
    this.sweepTimer = setTimeout(
      () => {
        this.sweeping = this.sweep()
          .then(() => undefined)
          .catch((error: unknown) =>
            this.options.log.debug({ err: rootCauseFirst(error) }, 'could not sweep the leases'),
          )
          .finally(() => {
            this.sweeping = undefined
            this.scheduleSweep()
          })
      },
      every * (0.5 + Math.random() / 2),
    )
    this.sweepTimer.unref()
  }

  /** Takes over expired leases and runs whose retry is due, as far as this process has room. */
  async sweep(): Promise<number> {
    const room = this.maxHeld - this.holdings.size
    const now = Date.now()
    if (room <= 0 || this.closing || !(await this.options.store.anyDue(now))) return 0
    const taken = await this.options.store.take(
      now,
      `${this.process}:s${++this.sweeps}`,
      now + this.options.leaseMs,
      Math.min(room, Math.max(1, this.options.concurrency())),
    )
    for (const lease of taken) {
      let request: OracleRequestEvent
      try {
        request = fromRequestPayload(JSON.parse(lease.payload))
      } catch (error) {
        // Not a request this release can read: dropped with a line rather than taken again and again.
        this.options.log.error(
          { jobId: lease.jobId, err: rootCauseFirst(error) },
          'a held request could not be read; dropped',
        )
        await this.options.store.finish(lease.jobId, lease.token)
        continue
      }
      this.hold(lease, request)
    }
    return taken.length
  }
}
