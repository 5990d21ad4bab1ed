import type { Logger } from '../../config/logger.ts'
import type { FluxTrigger, Skip } from './decision.ts'

/** While a job's rounds keep failing, one line this often (with how many failed meanwhile). */
const STILL_FAILING_EVERY_MS = 60_000

/** Skips said at debug: the ordinary ones of a feed that is doing its job. */
const QUIET_SKIPS: ReadonlySet<string> = new Set([
  'within_threshold',
  'already_submitted',
  'key_elsewhere',
])

/**
 * What one flux job says, by state rather than at each look: a skip once while it lasts; a failure
 * when the job's acts start failing, once a minute while they go on failing (with how many failed),
 * and when one succeeds again (a feed source or an RPC node away fails every look until it is
 * back: a line each would bury the log).
 */
export class FluxJobLog {
  private lastSkip: string | undefined
  private failing: { since: number; saidAt: number; failures: number } | undefined

  constructor(
    private readonly log: Logger,
    private readonly job: string,
    private readonly now: () => number = Date.now,
  ) {}

  skipped(trigger: FluxTrigger, skip: Skip, roundId: number): void {
    this.succeeded()
    const said = `${skip.code}:${roundId}`
    if (this.lastSkip !== said)
      this.log[QUIET_SKIPS.has(skip.code) ? 'debug' : 'info'](
        { job: this.job, trigger, round: roundId, code: skip.code },
        `flux monitor: ${skip.reason}`,
      )
    this.lastSkip = said
  }

  submitting(trigger: FluxTrigger, roundId: number, value: bigint): void {
    this.succeeded()
    this.lastSkip = undefined
    this.log.info(
      { job: this.job, trigger, round: roundId, value: value.toString() },
      'flux monitor: submitting',
    )
  }

  failed(trigger: FluxTrigger, message: string): void {
    const now = this.now()
    if (this.failing === undefined) {
      this.failing = { since: now, saidAt: now, failures: 1 }
      this.log.warn(
        { job: this.job, trigger, err: message, state: 'failing' },
        'flux monitor: could not act; trying again at the next poll, heartbeat or round',
      )
      return
    }
    this.failing.failures++
    if (now - this.failing.saidAt < STILL_FAILING_EVERY_MS) return
    this.failing.saidAt = now
    this.log.warn(
      { job: this.job, trigger, err: message, state: 'failing', failures: this.failing.failures },
      `flux monitor: still cannot act (${this.failing.failures} failed since ${new Date(this.failing.since).toISOString()})`,
    )
  }

  private succeeded(): void {
    if (this.failing === undefined) return
    const { since, failures } = this.failing
    this.failing = undefined
    this.log.info(
      { job: this.job, state: 'acting', failedMs: this.now() - since, failures },
      `flux monitor: acting again after ${failures} failed ${failures === 1 ? 'try' : 'tries'}`,
    )
  }
}
