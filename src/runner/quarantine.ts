import { FeedrunnerError, rootCauseFirst, serialiseError } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import { finish, type RequestOutcome } from './run-outcomes.ts'
import type { RunTrigger } from '../pipeline/index.ts'
import type { RunStore } from './run-record.ts'

/**
 * A run that crashed: its isolate died under a task (RunCrashedError). Its queue job goes back with
 * the crash counted, or the run is quarantined when that was its last (requests-worker.ts), whatever
 * started it: a request, a cron tick or a webhook call.
 */
export class RunCrashReport extends FeedrunnerError {
  override readonly name = 'RunCrashReport'
  constructor(
    readonly crash: FeedrunnerError,
    readonly runId: string,
    readonly job: string | undefined,
  ) {
    super('the run crashed', { kind: 'internal', retryable: true, cause: crash })
  }
}

/** A queue job's take: its last attempt or not, and its run's crashes so far against RUN_MAX_CRASHES. */
export interface RunAttempt {
  lastAttempt: boolean
  crashes: number
  maxCrashes: number
}

/**
 * Why a run is not run again by itself: it crashed RUN_MAX_CRASHES times (an isolate died under one
 * of its tasks, or the runner process running it died or stalled past its lock).
 */
export class RequestQuarantinedError extends FeedrunnerError {
  override readonly name = 'RequestQuarantinedError'
  constructor(crashes: number, lastCause: string | undefined, trigger: RunTrigger | undefined) {
    super(
      `quarantined: its run crashed ${crashes} times (RUN_MAX_CRASHES)${lastCause ? `; the last: ${lastCause}` : ' (its runner process died or stalled while running it)'}. It is not run again by itself: ${BY_HAND[trigger ?? 'request']}`,
      { kind: 'internal', retryable: false },
    )
  }
}

/** What runs a quarantined run again, by what started it. */
export const BY_HAND: Record<RunTrigger, string> = {
  request: '`feedrunner runs replay` runs it by hand',
  // Chainlink makes up no missed tick; neither does a replay.
  tick: "the job's next tick runs the job again",
  call: 'a new call to the job runs it again',
  round: "the feed's next poll or heartbeat runs the job again",
}

/**
 * Records a run quarantined: errored, with that cause and `quarantined`, never taken again
 * automatically (its queue job completes); `runs replay` runs it by hand, and a rebuild from the
 * chain does not reopen a request's.
 */
export async function quarantine(
  runs: RunStore,
  runId: string,
  crashes: number,
  lastCause: unknown,
  log: Logger,
  job: string | undefined,
): Promise<RequestOutcome> {
  const error = new RequestQuarantinedError(
    crashes,
    lastCause === undefined ? undefined : rootCauseFirst(lastCause),
    (await runs.get(runId))?.trigger,
  )
  return finish(
    runs,
    runId,
    { failure: serialiseError(error), quarantined: true },
    'errored',
    error.message,
    log.child({ runId, job: job ?? '(unknown)' }),
    { job, reason: 'quarantined' },
  )
}
