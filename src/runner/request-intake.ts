import type { Queue } from 'bullmq'
import type { Logger } from '../config/logger.ts'
import type { CancelRequestEvent, OracleRequestEvent } from '../chain/operator.ts'
import { recordRequest, type SharedClock } from '../metrics/index.ts'
import type { JobRegistry } from './job-registry.ts'
import { serialiseError } from '../config/errors.ts'
import { expiredRefusal } from './admission.ts'
import { baseRecord } from './run-fields.ts'
import { requestJobId, toRequestPayload } from './request-payload.ts'
import { addRequestJob } from './requests-queue.ts'
import type { RunStore } from './run-record.ts'
import { cancelClosure, chainShows, type Closure } from '../chain/request-fate.ts'

export interface RequestIntake {
  /** A confirmed OracleRequest: its run record and its `requests` job (one per request). */
  onRequest(event: OracleRequestEvent): Promise<void>
  /**
   * A request read again from the chain after Redis lost its state, past its cancelExpiration and
   * still open: its run record is made again (refused, with the reason) if absent; it is not run.
   */
  onExpired(event: OracleRequestEvent): Promise<void>
  /**
   * A request read again from the chain that the Operator answered or its requester cancelled
   * already: not run; its run record is made again from what the chain says if Redis lost it.
   */
  onClosed(event: OracleRequestEvent, closure: Closure): Promise<void>
  /** A confirmed CancelOracleRequest: the run is cancelled, a job still waiting goes. */
  onCancel(event: CancelRequestEvent): Promise<void>
}

/**
 * What the listener hands over: every confirmed request becomes one `requests` job, whose id is the
 * request's, so every runner process may see the log and add it while only one job exists; whichever
 * runner takes it runs it. A cancel removes a job still waiting; one already running meets the
 * cancel when its fulfilment is simulated, and sends nothing.
 */
export function createRequestIntake(parts: {
  runs: RunStore
  requestsQueue: Queue
  registry: JobRegistry
  /** Redis's clock, which stamps each job (addRequestJob). */
  clock: SharedClock
  log: Logger
}): RequestIntake {
  const { runs, requestsQueue, registry, clock, log } = parts
  return {
    async onRequest(event) {
      const loaded = registry.bySpecId(event.specId)
      // The record is created when absent (a request delivered again keeps its run), or opened in a
      // new round when the request was made again in another block (a reorg): its job is the round's.
      const run = await runs.create(event.requestId, {
        ...baseRecord(event, loaded),
        state: 'received',
      })
      const round = run.round || undefined
      await addRequestJob(
        requestsQueue,
        { ...toRequestPayload(event), ...(round ? { round } : {}) },
        requestJobId(event.chainId, event.operator, event.requestId, round),
        clock,
      )
      const job = run.job ?? loaded?.name
      recordRequest(job, 'received')
      log.info({ requestId: event.requestId, job }, 'request received')
    },
    async onExpired(event) {
      const refusal = expiredRefusal(event.cancelExpiration)
      await runs.create(event.requestId, {
        ...baseRecord(event, registry.bySpecId(event.specId)),
        state: 'refused',
        reason: refusal.message,
        failure: serialiseError(refusal),
      })
    },
    async onClosed(event, closure) {
      await runs.create(event.requestId, {
        ...baseRecord(event, registry.bySpecId(event.specId)),
        state: closure.state,
        ...(closure.state === 'fulfilled' ? { txHash: closure.txHash } : {}),
        reason: `${chainShows(closure)} (record made again from the chain)`,
      })
    },
    async onCancel(event) {
      const existing = await runs.get(event.requestId)
      const jobId = requestJobId(event.chainId, event.operator, event.requestId, existing?.round)
      const closure = cancelClosure(event)
      await runs.update(event.requestId, {
        state: closure.state,
        reason: `cancelled by the requester in ${closure.txHash}`,
      })
      // A waiting job can simply go; one already running meets the cancel when its fulfilment is
      // simulated, just before it would be signed.
      const job = await requestsQueue.getJob(jobId)
      if (job && ((await job.isWaiting()) || (await job.isDelayed())))
        await job.remove().catch(() => undefined)
      recordRequest(existing?.job, 'cancelled', 'cancelled')
      log.info({ requestId: event.requestId, job: existing?.job }, 'request cancelled')
    },
  }
}
