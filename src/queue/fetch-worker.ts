import { UnrecoverableError, type Job, type Processor } from 'bullmq'
import { FeedrunnerError, serialiseError } from '../config/errors.ts'
import type { FeedFamily } from '../config/settings.ts'
import {
  encodeFetchFailure,
  fetchJobDataSchema,
  type FetchFailure,
  type FetchFailureInit,
  type FetchJobData,
  type FetchJobResult,
} from './fetch-job.ts'

/** Thrown by a fetch function to say how the fetch failed and whether trying again can help. */
export class FetchFailureError extends FeedrunnerError {
  override readonly name = 'FetchFailureError'
  readonly failure: Omit<FetchFailure, 'attempts'>
  constructor(failure: FetchFailureInit, cause?: unknown) {
    super(failure.message, { kind: failure.kind, retryable: failure.retryable, cause })
    this.failure = { ...failure, causes: failure.causes ?? [] }
  }
}

export interface FetchContext {
  family: FeedFamily
  jobId: string
  /** 1 for the first try. */
  attempt: number
  attempts: number
}

/** Runs one fetch and returns the feed envelope; throws FetchFailureError on a known failure. */
export type FetchFunction = (
  data: FetchJobData,
  context: FetchContext,
) => Promise<Record<string, unknown>>

/** Redis's clock (src/queue/redis-clock.ts): what a finished fetch is stamped with. */
export interface FinishClock {
  now(): number | undefined
}

function finishedAt(clock: FinishClock): { finishedAt?: number } {
  const now = clock.now()
  return now === undefined ? {} : { finishedAt: now }
}

/**
 * Wraps a fetch function as a BullMQ processor. A failure becomes the job's failed reason as JSON
 * (see decodeFetchFailure); one that retrying cannot fix (a 4xx, a malformed answer) is an
 * UnrecoverableError, so BullMQ does not try again. Either outcome says when it finished by `clock`,
 * Redis's, for whoever decides later whether it is still fresh enough to share. `scrub` removes
 * secret values from everything that goes back into Redis, in case an upstream echoes a key in its
 * error text.
 */
export function fetchProcessor(
  family: FeedFamily,
  fetch: FetchFunction,
  scrub: (text: string) => string,
  clock: FinishClock,
): Processor<FetchJobData, FetchJobResult, string> {
  return async (job: Job<FetchJobData, FetchJobResult, string>) => {
    const attempts = job.opts.attempts ?? 1
    const attempt = job.attemptsMade + 1
    const parsed = fetchJobDataSchema.safeParse(job.data)
    if (!parsed.success) {
      const failure: FetchFailure = {
        kind: 'internal',
        message: `malformed fetch job: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
        retryable: false,
        causes: [],
        attempts: attempt,
        ...finishedAt(clock),
      }
      throw new UnrecoverableError(scrub(encodeFetchFailure(failure)))
    }
    try {
      const envelope = await fetch(parsed.data, { family, jobId: job.id ?? '', attempt, attempts })
      const text = JSON.stringify(envelope)
      const clean = scrub(text)
      return {
        envelope: clean === text ? envelope : (JSON.parse(clean) as Record<string, unknown>),
        ...finishedAt(clock),
      }
    } catch (error) {
      // Not ours: a bug in this worker, never worth a retry whatever its kind says.
      const failure: FetchFailure =
        error instanceof FetchFailureError
          ? { ...error.failure, attempts: attempt, ...finishedAt(clock) }
          : {
              ...serialiseError(error),
              kind: 'internal',
              retryable: false,
              attempts: attempt,
              ...finishedAt(clock),
            }
      const reason = scrub(encodeFetchFailure(failure))
      if (!failure.retryable || attempt >= attempts) throw new UnrecoverableError(reason)
      throw new Error(reason)
    }
  }
}
