import type { ErrorKind } from '../config/errors.ts'
import type { SharedClock } from './definitions.ts'
import { observeFetch, observeQueueWait } from './observe.ts'
import { fetchStatusLabel, type FetchFailureKind } from './reasons.ts'

/** The failure a fetch function throws (src/queue/fetch-worker.ts FetchFailureError), seen structurally. */
interface FailureLike {
  failure?: { kind?: ErrorKind; providerStatus?: number; invalidResponse?: boolean }
}

/** The label's failure class: the service answered wrongly, failed or did not answer, or we failed. */
function failureClass(failure: FailureLike['failure']): FetchFailureKind {
  if (failure?.invalidResponse === true) return 'invalid-response'
  if (failure?.kind === undefined || failure.kind === 'internal' || failure.kind === 'config')
    return 'internal'
  return 'upstream'
}

/**
 * Wraps a fetch worker's fetch function: every call's latency goes to feedrunner_fetch_duration_seconds
 * and every failed call to feedrunner_fetch_errors_total, by family and status class.
 */
export function instrumentFetch<D, C extends { family: string }, R>(
  fetch: (data: D, context: C) => Promise<R>,
): (data: D, context: C) => Promise<R> {
  return async (data, context) => {
    const started = performance.now()
    try {
      const result = await fetch(data, context)
      observeFetch(
        context.family,
        fetchStatusLabel(200),
        (performance.now() - started) / 1_000,
        true,
      )
      return result
    } catch (error) {
      const failure = (error as FailureLike | undefined)?.failure
      const status = fetchStatusLabel(failure?.providerStatus, failureClass(failure))
      observeFetch(context.family, status, (performance.now() - started) / 1_000, false)
      throw error
    }
  }
}

/** Something that emits BullMQ's worker `active` event. */
interface ActiveEmitter {
  on(event: 'active', listener: (job: { timestamp: number; processedOn?: number }) => void): unknown
}

/**
 * Observes, for every job a worker takes, how long it waited in `queueLabel` (of `chain`, a runner's)
 * by Redis's clock, which stamped the job when it was added: the adder and the worker may be hosts
 * whose wall clocks disagree (a job added on a host 120 s behind waited 120 s more by theirs).
 */
export function observeWaits(
  worker: ActiveEmitter,
  queueLabel: string,
  clock: SharedClock,
  chain?: string,
): void {
  worker.on('active', (job) => observeQueueWait(queueLabel, job, clock.now(), chain))
}
