import { FeedrunnerError, rootCauseFirst, serialiseError } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { finish, type RequestOutcome } from './run-outcomes.ts'
import type { RunStore } from './run-record.ts'

/**
 * A run that crashed: its isolate died under a task (RunCrashedError), and it goes back to the queue
 * with its crash counted, or is quarantined when that was its last (see quarantineOrRetry).
 */
export class RunCrashReport extends FeedrunnerError {
  override readonly name = 'RunCrashReport'
  constructor(readonly crash: FeedrunnerError) {
    super('the run crashed', { kind: 'internal', retryable: true, cause: crash })
  }
}

/**
 * Why a request is not run again by itself: its runs crashed RUN_MAX_CRASHES times (an isolate died
 * under one of its tasks, or the runner process running it died or stalled past its lock).
 */
export class RequestQuarantinedError extends FeedrunnerError {
  override readonly name = 'RequestQuarantinedError'
  constructor(crashes: number, lastCause: string | undefined) {
    super(
      `quarantined: its run crashed ${crashes} times (RUN_MAX_CRASHES)${lastCause ? `; the last: ${lastCause}` : ' (its runner process died or stalled while running it)'}. It is not run again by itself: \`feedrunner runs replay\` runs it by hand`,
      { kind: 'internal', retryable: false },
    )
  }
}

/**
 * Records a request quarantined: errored, with that cause and `quarantined`, never taken again
 * automatically (its job completes); `runs replay` runs it by hand, and a rebuild from the chain
 * does not reopen it.
 */
export function quarantine(
  runs: RunStore,
  request: OracleRequestEvent,
  crashes: number,
  lastCause: unknown,
  log: Logger,
  job: string | undefined,
): Promise<RequestOutcome> {
  const error = new RequestQuarantinedError(
    crashes,
    lastCause === undefined ? undefined : rootCauseFirst(lastCause),
  )
  return finish(
    runs,
    request.requestId,
    { failure: serialiseError(error), quarantined: true },
    'errored',
    error.message,
    log.child({ requestId: request.requestId, job: job ?? '(unknown)' }),
    { job, reason: 'quarantined' },
  )
}
