import type { Queue } from 'bullmq'
import type { Logger } from '../config/logger.ts'
import type { CancelRequestEvent, OracleRequestEvent } from '../chain/operator.ts'
import { recordRequest } from '../metrics/index.ts'
import type { JobRegistry } from './job-registry.ts'
import { baseRecord } from './run-fields.ts'
import { requestJobId, toRequestPayload } from './request-payload.ts'
import type { RunStore } from './run-record.ts'
import type { DirectRuns } from './direct/direct-runs.ts'

export interface RequestIntake {
  /** A confirmed OracleRequest: its run record, and its run here under a lease or its `requests` job. */
  onRequest(event: OracleRequestEvent): Promise<void>
  /** A confirmed CancelOracleRequest: the run is cancelled, a job still waiting goes. */
  onCancel(event: CancelRequestEvent): Promise<void>
}

/**
 * What the listener hands over: a process that works claims each request and runs it itself (one
 * lease per request, whichever process saw it); one that only listens, or holds too many already,
 * makes it a `requests` job (one per request). Cancels end either.
 */
export function createRequestIntake(parts: {
  runs: RunStore
  requestsQueue: Queue
  registry: JobRegistry
  log: Logger
  /** This process's direct runs, once its working half started (none in a listen-only process). */
  direct: () => DirectRuns | undefined
}): RequestIntake {
  const { runs, requestsQueue, registry, log } = parts
  const enqueue = async (event: OracleRequestEvent, jobId: string): Promise<void> => {
    const claimed = (await parts.direct()?.claim(event)) ?? 'full'
    if (claimed === 'full') await requestsQueue.add('request', toRequestPayload(event), { jobId })
  }
  return {
    async onRequest(event) {
      const jobId = requestJobId(event.chainId, event.operator, event.requestId)
      const loaded = registry.bySpecId(event.specId)
      // Both at once: the run record is only created when absent (a request delivered again keeps its
      // run), and a run that starts first creates the record itself.
      const [run] = await Promise.all([
        runs.create(event.requestId, { ...baseRecord(event, loaded), state: 'received' }),
        enqueue(event, jobId),
      ])
      const job = run.job ?? loaded?.name
      recordRequest(job, 'received')
      log.info({ requestId: event.requestId, job }, 'request received')
    },
    async onCancel(event) {
      const jobId = requestJobId(event.chainId, event.operator, event.requestId)
      const existing = await runs.get(event.requestId)
      await runs.update(event.requestId, {
        state: 'cancelled',
        reason: `cancelled by the requester in ${event.txHash}`,
      })
      // A waiting job or run can simply go; one already running meets the Operator's "Must have a valid
      // requestId".
      await parts.direct()?.cancel(jobId)
      const job = await requestsQueue.getJob(jobId)
      if (job && ((await job.isWaiting()) || (await job.isDelayed())))
        await job.remove().catch(() => undefined)
      recordRequest(existing?.job, 'cancelled', 'cancelled')
      log.info({ requestId: event.requestId, job: existing?.job }, 'request cancelled')
    },
  }
}
