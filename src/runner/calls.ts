import type { Job as QueueJob } from 'bullmq'
import { keccak256, toUtf8Bytes } from 'ethers'
import { z } from 'zod'
import type { PipelineWorkerOptions } from './pipeline-worker.ts'
import { runPushed } from './push-run.ts'
import type { RunAttempt } from './quarantine.ts'
import type { RequestOutcome } from './run-outcomes.ts'
import type { RunRecord } from './run-record.ts'

/**
 * A webhook job's run, as `POST /v2/jobs/<externalJobID>/runs` adds it to the chain's `requests`
 * queue (the one queue, worker and retry policy every run has): the job, the run's id, who called,
 * and the body the run reads as `$(jobRun.requestBody)` (the caller's, never a key of ours).
 */
export const callPayloadSchema = z.object({
  kind: z.literal('call'),
  chainId: z.number().int().positive(),
  externalJobId: z.string(),
  runId: z.string(),
  /** The external initiator's name, or `operator` (RUNS_API_TOKEN). */
  caller: z.string(),
  requestBody: z.unknown(),
  /** Runs of the call whose isolate died under a task (as a request's `crashes`). */
  crashes: z.number().int().nonnegative().optional(),
})
export type CallPayload = z.infer<typeof callPayloadSchema>

export function isCallPayload(data: unknown): data is CallPayload {
  return (data as { kind?: unknown } | undefined)?.kind === 'call'
}

/**
 * A call's run id, 32 bytes like a request id (`runs show` takes it): from the caller's idempotency
 * key when it sends one (the same key is the same run), else from a fresh random id.
 */
export function callRunId(externalJobId: string, key: string): string {
  return keccak256(toUtf8Bytes(`call:${externalJobId}:${key}`))
}

export function callBase(payload: CallPayload): Partial<RunRecord> {
  return {
    chainId: payload.chainId,
    trigger: 'call',
    caller: payload.caller,
    job: '',
    externalJobId: payload.externalJobId,
    operator: '',
    requester: '',
    payment: '0',
    blockNumber: 0,
    requestTxHash: '',
  }
}

/** Runs a webhook call's queue job; a job removed meanwhile leaves its run errored. */
export async function runCall(
  queueJob: QueueJob<CallPayload>,
  options: PipelineWorkerOptions & RunAttempt,
): Promise<RequestOutcome | undefined> {
  const payload = callPayloadSchema.parse(queueJob.data)
  const loaded = options.registry.jobs.find(
    (job) => job.externalJobId === payload.externalJobId && job.job.spec.type === 'webhook',
  )
  const base = callBase(payload)
  if (!loaded) {
    const reason = `job ${payload.externalJobId} is no longer served (its spec was removed or changed type)`
    const stored = await options.runs.update(payload.runId, { ...base, state: 'errored', reason })
    return { state: stored.state, reason: stored.reason }
  }
  return runPushed(
    loaded,
    payload.runId,
    { ...base, job: loaded.name },
    { requestBody: payload.requestBody, meta: {} },
    `call ${payload.runId.slice(0, 12)}`,
    options,
  )
}
