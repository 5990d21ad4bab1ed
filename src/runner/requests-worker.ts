import { UnrecoverableError, Worker, type Job as QueueJob } from 'bullmq'
import { rootCauseFirst } from '../config/errors.ts'
import { WORKER_IDLE_WAIT_SECONDS } from '../queue/factories.ts'
import { runRequest, type PipelineWorkerOptions } from './pipeline-worker.ts'
import { quarantine, RunCrashReport, type RunAttempt } from './quarantine.ts'
import { readRequestPayload, type RequestPayload } from './request-payload.ts'
import type { RequestOutcome } from './run-outcomes.ts'
import { leasesFromLock, mayRetry } from './retry-policy.ts'
import { runTick } from './tick-run.ts'
import { isCallPayload, runCall, type CallPayload } from './calls.ts'
import { isTickPayload, type TickPayload } from './ticks.ts'

/** RUN_MAX_CRASHES' default: a request that crashed its run twice is not run again by itself. */
export const DEFAULT_MAX_CRASHES = 2

/**
 * The worker of a chain's `requests` queue: one job per request, run by whichever runner takes it.
 * BullMQ's lock holds a job while it runs (renewed, expiring by Redis's clock), its stalled check
 * gives the job of a runner that died to another, and its attempts and backoff are the one retry
 * policy. A run that crashed (its isolate died, or its process died or stalled while running it:
 * BullMQ's stalled count) counts; at RUN_MAX_CRASHES the request is quarantined, not run again.
 */
export function createPipelineWorker(options: PipelineWorkerOptions): Worker {
  const maxCrashes = options.maxCrashes ?? DEFAULT_MAX_CRASHES
  const process = async (queueJob: QueueJob<RunPayload>): Promise<RequestOutcome | undefined> => {
    const crashes = queueJob.stalledCounter + (queueJob.data.crashes ?? 0)
    const lastAttempt = queueJob.attemptsMade + 1 >= (queueJob.opts.attempts ?? 1)
    try {
      return await runOf(queueJob, { ...options, lastAttempt, crashes, maxCrashes })
    } catch (error) {
      if (error instanceof RunCrashReport) {
        const { runs, logger } = options
        if (crashes + 1 >= maxCrashes)
          return quarantine(runs, error.runId, crashes + 1, error.crash, logger, error.job)
        await queueJob.updateData({ ...queueJob.data, crashes: (queueJob.data.crashes ?? 0) + 1 })
        throw error
      }
      // A retryable failure goes back with the queue's backoff (the run record says why); anything
      // else is not tried again. The decision reads the error's flag, never its words.
      if (mayRetry(error)) throw error
      throw new UnrecoverableError(rootCauseFirst(error))
    }
  }
  const leases = leasesFromLock(options.lockDurationMs)
  return new Worker(options.queueName, process, {
    connection: options.connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    drainDelay: WORKER_IDLE_WAIT_SECONDS,
    lockDuration: leases.jobLockMs,
    stalledInterval: leases.stalledIntervalMs,
    // A stalled job goes back to the queue (its runner died or stalled); the next take counts it as
    // a crash of its request and quarantines it at RUN_MAX_CRASHES, so BullMQ never fails it first.
    maxStalledCount: maxCrashes,
    autorun: false,
  })
}

type RunPayload = RequestPayload | TickPayload | CallPayload

/**
 * The run a queue job holds, by what started it: a request, a cron tick or a webhook call (one
 * queue, worker and retry policy). One that crashed RUN_MAX_CRASHES times is quarantined, not run.
 */
function runOf(
  queueJob: QueueJob<RunPayload>,
  options: PipelineWorkerOptions & RunAttempt,
): Promise<RequestOutcome | undefined> {
  if (isTickPayload(queueJob.data)) return runTick(queueJob as QueueJob<TickPayload>, options)
  if (isCallPayload(queueJob.data)) return runCall(queueJob as QueueJob<CallPayload>, options)
  const requestJob = queueJob as QueueJob<RequestPayload>
  const { request, replay, round } = readRequestPayload(requestJob.data)
  if (options.crashes >= options.maxCrashes) {
    const job = options.registry.bySpecId(request.specId)?.name
    return quarantine(
      options.runs,
      request.requestId,
      options.crashes,
      undefined,
      options.logger,
      job,
    )
  }
  return runRequest(request, { ...options, replay, round })
}
