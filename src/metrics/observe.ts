import type { Job as QueueJob } from 'bullmq'
import {
  adapterDuration,
  adapterRequests,
  fetchDuration,
  fetchErrors,
  jobLabel,
  chainLabel,
  lostLocks,
  queueWait,
  replaysTotal,
  requestsTotal,
  runDuration,
  taskDuration,
  type RequestMetricState,
} from './definitions.ts'
import type { ReasonClass } from './reasons.ts'

/** What the running parts call to record an event (the metrics themselves: definitions.ts). */

/** What started a run: an oracle request, a cron job's tick, a webhook call. */
export type RunTriggerLabel = 'request' | 'tick' | 'call'

export function recordRequest(
  job: string | undefined,
  state: RequestMetricState,
  reason: ReasonClass = 'none',
  trigger: RunTriggerLabel = 'request',
): void {
  requestsTotal.inc({ job: jobLabel(job), state, reason, trigger })
}

export function recordReplay(job: string | undefined, state: RequestMetricState): void {
  replaysTotal.inc({ job: jobLabel(job), state })
}

export function observeRun(
  job: string | undefined,
  state: RequestMetricState,
  seconds: number,
  trigger: RunTriggerLabel = 'request',
): void {
  runDuration.observe({ job: jobLabel(job), state, trigger }, seconds)
}

export function observeTask(
  job: string | undefined,
  taskType: string,
  ok: boolean,
  seconds: number,
): void {
  taskDuration.observe(
    { job: jobLabel(job), task_type: taskType.slice(0, 32), outcome: ok ? 'ok' : 'error' },
    seconds,
  )
}

export function observeFetch(family: string, status: string, seconds: number, ok: boolean): void {
  fetchDuration.observe({ family, status }, seconds)
  if (!ok) fetchErrors.inc({ family, status })
}

/** One answered adapter request; `endpoint` must already be a catalog name or "unknown". */
export function observeAdapterRequest(endpoint: string, status: string, seconds: number): void {
  adapterRequests.inc({ endpoint, status })
  adapterDuration.observe({ endpoint }, seconds)
}

/**
 * Records how long a job waited before this attempt started: from its `timestamp` (the adder's
 * reading of Redis's clock) to `startedAt` (the worker's reading of it when it took the job). Without
 * a reading, BullMQ's processedOn, the worker host's wall clock.
 */
export function observeQueueWait(
  queueLabel: string,
  job: Pick<QueueJob, 'timestamp' | 'processedOn'>,
  startedAt: number | undefined,
  chain?: string,
): void {
  const started = startedAt ?? job.processedOn ?? Date.now()
  queueWait.observe(
    { queue: queueLabel, ...chainLabel(chain) },
    Math.max(0, (started - job.timestamp) / 1_000),
  )
}

/** Locks a worker of `queue` (BullMQ's queue name) found lapsed, `jobs` of them at once. */
export function countLostLocks(queue: string, jobs: number): void {
  lostLocks.inc({ queue }, jobs)
}
