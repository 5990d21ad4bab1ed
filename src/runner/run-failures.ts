import { withContext, type ErrorKind, type FeedrunnerError } from '../config/errors.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { originOf, TaskFailure, type TaskOutcome } from '../pipeline/index.ts'

/**
 * A bridge failure worth another try later, by its kind: `unavailable` (the adapter could not be
 * reached, or answered 503: its Redis is down) or `timeout` (it answered 504: the fetch did not finish
 * in time, or the task timed out). A 502 (the feed service failed after the adapter's own retries,
 * kind `upstream`) and every 4xx are final.
 */
const TRANSIENT_BRIDGE_KINDS: ReadonlySet<ErrorKind> = new Set(['unavailable', 'timeout'])

export function transientBridgeFailure(tasks: readonly TaskOutcome[]): TaskOutcome | undefined {
  if (tasks.some((task) => task.type === 'ethtx' && task.ok)) return undefined
  const failed = tasks.find(
    (task) =>
      task.type === 'bridge' &&
      !task.ok &&
      task.failure !== undefined &&
      TRANSIENT_BRIDGE_KINDS.has(task.failure.kind),
  )
  // An ethtx that timed out may still be mined (its transaction was signed by a process that died):
  // running the request again finds the same signed attempt in the tx store through its idempotency
  // key and sends those bytes again, so it cannot send twice.
  // Only the ethtx's own wait: an ethtx whose input failed (an http task that timed out on a
  // source dripping a byte a second) sent nothing, and running it again would only fetch again
  // (issue 23: such a run stayed `running` through five deliveries).
  // So may one whose node did not answer (every RPC endpoint of the chain away): its nonce is taken
  // and its attempt stored, and a nonce left unsent would hold back every later transaction of the key.
  const waitedForTx = tasks.find(
    (task) =>
      task.type === 'ethtx' &&
      !task.ok &&
      task.failure !== undefined &&
      TRANSIENT_BRIDGE_KINDS.has(task.failure.kind) &&
      !failedThroughInput(task.failure),
  )
  return failed ?? waitedForTx
}

/**
 * A run's failure in words, root cause first, then where: the task it began in, the job, the request
 * ("the feed service answered 404: no match; task fetch, job game-odds, request 0x4f1c"). Terminal
 * tasks that failed for one origin are told once.
 */
export function runFailures(
  request: OracleRequestEvent,
  job: string,
  failures: readonly TaskFailure[],
): FeedrunnerError[] {
  const seen = new Set<string>()
  const origins: FeedrunnerError[] = []
  for (const failure of failures) {
    const origin = originOf(failure)
    if (seen.has(origin.message)) continue
    seen.add(origin.message)
    origins.push(withContext(`request ${request.requestId}`, withContext(`job ${job}`, origin)))
  }
  return origins
}

/** A task failure that only passes on an input task's failure (its cause chain holds a TaskFailure). */
function failedThroughInput(failure: Error): boolean {
  for (let at: unknown = failure.cause; at instanceof Error; at = at.cause)
    if (at instanceof TaskFailure) return true
  return false
}
