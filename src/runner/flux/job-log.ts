import type { Logger } from '../../config/logger.ts'
import type { FluxTrigger, Skip } from './decision.ts'
import { FailureStreak } from './failure-streak.ts'

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
  private readonly failures: FailureStreak

  constructor(
    private readonly log: Logger,
    private readonly job: string,
    now: () => number = Date.now,
  ) {
    this.failures = new FailureStreak(now)
  }

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
    const report = this.failures.failed()
    if (report === undefined) return
    const { state, since, failures } = report
    this.log.warn(
      { job: this.job, trigger, err: message, state: 'failing', failures },
      state === 'began'
        ? 'flux monitor: could not act; trying again at the next poll, heartbeat or round'
        : `flux monitor: still cannot act (${failures} failed since ${new Date(since).toISOString()})`,
    )
  }

  private succeeded(): void {
    const ended = this.failures.succeeded()
    if (ended === undefined) return
    const { failedMs, failures } = ended
    this.log.info(
      { job: this.job, state: 'acting', failedMs, failures },
      `flux monitor: acting again after ${failures} failed ${failures === 1 ? 'try' : 'tries'}`,
    )
  }
}

/**
 * What the monitor's loop says of its looks at the chain (the head, the aggregators' logs): a look
 * that failed when failures begin, once a minute while they go on, and the look that worked again.
 * An RPC node away is told by its endpoint's outage report too; a chain that answers what the
 * monitor cannot read (a reverting aggregator) only here.
 */
export class FluxLooksLog {
  private readonly failures: FailureStreak

  constructor(
    private readonly log: Logger,
    private readonly chainId: number,
    now: () => number = Date.now,
  ) {
    this.failures = new FailureStreak(now)
  }

  failed(message: string): void {
    const report = this.failures.failed()
    if (report === undefined) return
    const { state, since, failures } = report
    this.log.warn(
      { chainId: this.chainId, err: message, state: 'failing', failures },
      state === 'began'
        ? 'flux monitor: a look at the chain failed; trying again at every tick'
        : `flux monitor: still cannot look at the chain (${failures} looks failed since ${new Date(since).toISOString()})`,
    )
  }

  looked(): void {
    const ended = this.failures.succeeded()
    if (ended === undefined) return
    const { failedMs, failures } = ended
    this.log.info(
      { chainId: this.chainId, state: 'looking', failedMs, failures },
      `flux monitor: looking again after ${failures} failed ${failures === 1 ? 'look' : 'looks'}`,
    )
  }
}
