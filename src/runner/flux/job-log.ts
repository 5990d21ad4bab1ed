import type { Logger } from '../../config/logger.ts'
import type { FluxTrigger, Skip } from './decision.ts'
import { FailureStreak, type StreakWords } from './failure-streak.ts'

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
    this.failures = new FailureStreak(log, { job }, ACTS_SAID, now)
  }

  skipped(trigger: FluxTrigger, skip: Skip, roundId: number): void {
    this.failures.succeeded()
    const said = `${skip.code}:${roundId}`
    if (this.lastSkip !== said)
      this.log[QUIET_SKIPS.has(skip.code) ? 'debug' : 'info'](
        { job: this.job, trigger, round: roundId, code: skip.code },
        `flux monitor: ${skip.reason}`,
      )
    this.lastSkip = said
  }

  submitting(trigger: FluxTrigger, roundId: number, value: bigint): void {
    this.failures.succeeded()
    this.lastSkip = undefined
    this.log.info(
      { job: this.job, trigger, round: roundId, value: value.toString() },
      'flux monitor: submitting',
    )
  }

  failed(trigger: FluxTrigger, message: string): void {
    this.failures.failed({ trigger, err: message })
  }
}

/** What a job's failing acts say (FluxJobLog). */
const ACTS_SAID: StreakWords = {
  began: 'flux monitor: could not act; trying again at the next poll, heartbeat or round',
  lasting: (failures, since) =>
    `flux monitor: still cannot act (${failures} failed since ${since})`,
  ended: (failures) =>
    `flux monitor: acting again after ${failures} failed ${failures === 1 ? 'try' : 'tries'}`,
  endedState: 'acting',
}

/**
 * What the monitor's looks at the chain (the head, the aggregators' logs) say while they fail. An
 * RPC node away is told by its endpoint's outage report too; a chain that answers what the monitor
 * cannot read (a reverting aggregator) only here.
 */
export const LOOKS_SAID: StreakWords = {
  began: 'flux monitor: a look at the chain failed; trying again at every tick',
  lasting: (failures, since) =>
    `flux monitor: still cannot look at the chain (${failures} looks failed since ${since})`,
  ended: (failures) =>
    `flux monitor: looking again after ${failures} failed ${failures === 1 ? 'look' : 'looks'}`,
  endedState: 'looking',
}
