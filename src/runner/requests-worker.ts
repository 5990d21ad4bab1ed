import { UnrecoverableError, Worker, type Job as QueueJob } from 'bullmq'
import { rootCauseFirst } from '../config/errors.ts'
import { WORKER_IDLE_WAIT_SECONDS } from '../queue/factories.ts'
import { runRequest, type PipelineWorkerOptions } from './pipeline-worker.ts'
import { quarantine, RunCrashReport } from './quarantine.ts'
import { fromRequestPayload, replayOf, roundOf, type RequestPayload } from './request-payload.ts'
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
  const process = async (
    queueJob: QueueJob<RequestPayload | TickPayload | CallPayload>,
  ): Promise<RequestOutcome | undefined> => {
    const lastAttempt = queueJob.attemptsMade + 1 >= (queueJob.opts.attempts ?? 1)
    // A cron tick and a webhook call are runs of the same queue, worker and retry policy.
    const pushed = isTickPayload(queueJob.data)
      ? runTick(queueJob as QueueJob<TickPayload>, { ...options, lastAttempt })
      : isCallPayload(queueJob.data)
        ? runCall(queueJob as QueueJob<CallPayload>, { ...options, lastAttempt })
        : undefined
    if (pushed)
      return pushed.catch((error: unknown) => {
        if (mayRetry(error)) throw error
        throw new UnrecoverableError(rootCauseFirst(error))
      })
    const requestJob = queueJob as QueueJob<RequestPayload>
    const request = fromRequestPayload(requestJob.data)
    const crashes = requestJob.stalledCounter + (requestJob.data.crashes ?? 0)
    const job = options.registry.bySpecId(request.specId)?.name
    if (crashes >= maxCrashes)
      return quarantine(options.runs, request, crashes, undefined, options.logger, job)
    try {
      return await runRequest(request, {
        ...options,
        lastAttempt,
        replay: replayOf(requestJob.data),
        round: roundOf(requestJob.data),
      })
    } catch (error) {
      if (error instanceof RunCrashReport) {
        if (crashes + 1 >= maxCrashes)
          return quarantine(options.runs, request, crashes + 1, error.crash, options.logger, job)
        await requestJob.updateData({
          ...requestJob.data,
          crashes: (requestJob.data.crashes ?? 0) + 1,
        })
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
