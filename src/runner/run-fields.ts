// What a run record holds besides its states: the request's fields, each task's line, the fulfilment's hash.
import { serialiseError } from '../config/errors.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { boundedPlain, type TaskOutcome } from '../pipeline/index.ts'
import type { LoadedJob } from './job-registry.ts'
import type { RunRecord, TaskRecord } from './run-record.ts'

/** The fields of a run record that come from the request itself. */
export function baseRecord(
  request: OracleRequestEvent,
  loaded: LoadedJob | undefined,
): Partial<RunRecord> {
  return {
    chainId: request.chainId,
    operator: request.operator,
    job: loaded?.name ?? '(unknown)',
    externalJobId: loaded?.externalJobId ?? '',
    requester: request.requester,
    payment: request.payment.toString(),
    callbackAddr: request.callbackAddr,
    callbackFunctionId: request.callbackFunctionId,
    cancelExpiration: request.cancelExpiration.toString(),
    blockNumber: request.blockNumber,
    requestTxHash: request.txHash,
  }
}

/** A task's line in the run record: outputs and errors cut at TASK_OUTPUT_MAX_CHARS (a source picks their size). */
export function taskRecord(outcome: TaskOutcome, maxChars = 4_096): TaskRecord {
  return {
    id: outcome.id,
    type: outcome.type,
    ms: outcome.durationMs,
    ...(outcome.ok
      ? { output: boundedPlain(outcome.value, maxChars) }
      : {
          error: boundedPlain(outcome.error ?? 'failed', maxChars) as string,
          ...(outcome.failure ? { failure: serialiseError(outcome.failure) } : {}),
        }),
  }
}

export function sentTxHash(tasks: readonly TaskOutcome[]): string | undefined {
  for (const task of tasks) {
    const value = task.value as { txHash?: unknown } | undefined
    if (task.type === 'ethtx' && task.ok && typeof value?.txHash === 'string') return value.txHash
  }
  return undefined
}
