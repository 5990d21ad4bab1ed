import type { ErrorKind } from '../src/config/errors.ts'
import type { FaultWindow, History, RequestFact, RunFact, Violation } from './history.ts'

/**
 * Liveness: every request the harness made is answered, or the schedule explains why not. The
 * harness knows when each fault began and ended; what the stack may still need after one (the
 * recovery below) is counted as the fault's too. What is left is time with the stack healthy.
 */

/**
 * The longest a request may stay open with the stack healthy. A healthy stack answers in a few
 * seconds: the listener sees the request within a poll (250 ms here) and its confirmation block
 * (1 s), the fetch takes milliseconds, the fulfilment is mined in the next block; a burst of 40
 * requests at once goes out within a few more (64 runs per key at once, one broadcast batch every
 * 50 ms). 30 s is several times that, for a two-core machine with other work beside it; a request
 * open longer than that with no fault to blame has been forgotten, or waits on something that
 * should not hold it.
 */
export const HEALTHY_OPEN_BOUND_MS = 30_000

/**
 * How long after a fault the stack may still be catching up: a request held by a runner that was
 * stopped waits for its lock to run out (RUNNER_LOCK_MS) and for BullMQ's next stalled-job check
 * (every half of it), so up to 1.5 × RUNNER_LOCK_MS, while another runner takes the sender key's
 * lease; a run that failed during the fault waits out the requests queue's backoff (1, 2, 4, 8,
 * 16 s...), which after a fault of up to 15 s is at most 16 s more. 2 × RUNNER_LOCK_MS + 20 s
 * covers both with a few seconds for the run itself: 30 s with a 5 s lock, 80 s with the default.
 */
export function recoveryMs(lockMs: number): number {
  return 2 * lockMs + 20_000
}

/** What became of one request the harness made. */
export interface RequestVerdict {
  request: RequestFact
  outcome: 'answered' | 'excused' | 'unexplained'
  /** Why an unanswered request is excused, or what is wrong with it. */
  why?: string
}

/** Failures a fault that takes a dependency away or slows it can leave behind. */
const DEPENDENCY_GONE: readonly ErrorKind[] = ['unavailable', 'timeout', 'upstream']
/** Failures a fault that takes chain state away, or the sender's record of it, can leave behind. */
const STATE_LOST: readonly ErrorKind[] = ['reverted', 'node_refused']

/**
 * Whether `fault` can be the cause of the run's failure. A run quarantined for its crashes was on a
 * runner that stopped or lost its lock (a runner stopped, Redis away); anything else by its kind.
 * No fault covers `internal` (a bug), `bad_input`, `config` or `not_authorised`: the harness's
 * requests are well formed, its settings right and its keys authorised. A failure of no known kind
 * is covered by nothing.
 */
export function faultCovers(fault: FaultWindow, run: RunFact): boolean {
  const redis = fault.kind.startsWith('redis-')
  if (run.quarantined) return fault.stopsRunner || redis
  const kind = run.failureKind
  if (kind === undefined) return false
  if (fault.kind === 'reorg') return STATE_LOST.includes(kind)
  if (redis && STATE_LOST.includes(kind)) return true
  return DEPENDENCY_GONE.includes(kind)
}

/** The parts of [from, to] that no fault or its recovery covers, in milliseconds. */
export function healthyMs(
  from: number,
  to: number,
  faults: readonly FaultWindow[],
  recovery: number,
): number {
  return healthyStretches(from, to, faults, recovery).reduce((sum, [a, b]) => sum + b - a, 0)
}

/** The stretches of [from, to] that no fault or its recovery covers, in order. */
export function healthyStretches(
  from: number,
  to: number,
  faults: readonly FaultWindow[],
  recovery: number,
): Array<readonly [number, number]> {
  const shadows = faults
    .map((fault) => [fault.fromMs, fault.toMs + recovery] as const)
    .sort((a, b) => a[0] - b[0])
  const stretches: Array<readonly [number, number]> = []
  let cursor = from
  for (const [start, end] of shadows) {
    if (start > cursor && cursor < to) stretches.push([cursor, Math.min(start, to)])
    cursor = Math.max(cursor, end)
    if (cursor >= to) return stretches
  }
  if (to > cursor) stretches.push([cursor, to])
  return stretches
}

const FINAL_FAILURES = new Set(['errored', 'refused'])

/**
 * Refusals the schedule asks for: its requesters pass REQUESTER_MAX_CONCURRENT_RUNS and
 * REQUESTER_MAX_REQUESTS_PER_MINUTE on purpose (chaos/admission.ts), read by the refusal's code.
 */
const ADMISSION_REFUSALS: ReadonlySet<string> = new Set([
  'requester_busy',
  'requester_rate_limited',
])

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** Each request the harness made, and each broken liveness invariant. */
export function livenessOf(history: History): {
  verdicts: RequestVerdict[]
  violations: Violation[]
} {
  const verdicts: RequestVerdict[] = []
  const violations: Violation[] = []
  const answers = firstByRequest(history.responses)
  const cancels = firstByRequest(history.cancels)
  const recovery = recoveryMs(history.lockMs)
  const since = (ms: number) => seconds(ms - history.startedAt)
  for (const request of history.requests) {
    if (request.purpose === undefined) continue
    const id = `request ${request.requestId.slice(0, 10)} (${request.purpose}, block ${request.block})`
    const answer = answers.get(request.requestId)
    const cancel = cancels.get(request.requestId)
    const closedAt = (answer ?? cancel)?.at
    const verdict = answer ? undefined : excuseOf(history, request, cancel?.block, since)
    // An excused refusal is the node's decision: the request may stay open on chain until its
    // expiry, but the node's part ended when it decided (a run record's time).
    const decidedAt =
      verdict?.outcome === 'excused' ? history.runs.get(request.requestId)?.at : undefined
    const openTo = closedAt !== undefined ? closedAt * 1000 : (decidedAt ?? history.stoppedAt)
    const healthy = healthyMs(request.at * 1000, openTo, history.faults, recovery)
    if (healthy > HEALTHY_OPEN_BOUND_MS)
      violations.push({
        invariant: 'stalled',
        detail: `${id} was open ${seconds(openTo - request.at * 1000)} from ${since(request.at * 1000)}, ${seconds(healthy)} of it with no fault in the air nor in the ${seconds(recovery)} after one (bound ${seconds(HEALTHY_OPEN_BOUND_MS)}); ${answer ? `answered in block ${answer.block}` : cancel ? `cancelled in block ${cancel.block}` : decidedAt !== undefined ? `refused at ${since(decidedAt)}` : 'still open'}`,
      })
    if (!verdict) {
      verdicts.push({ request, outcome: 'answered' })
      continue
    }
    verdicts.push(verdict)
    if (verdict.outcome === 'unexplained' && verdict.why !== undefined)
      violations.push({ invariant: 'unexplained-failure', detail: `${id} ${verdict.why}` })
  }
  return { verdicts, violations }
}

/** Why a request the chain shows unanswered may be so, or why not. */
function excuseOf(
  history: History,
  request: RequestFact,
  cancelBlock: number | undefined,
  since: (ms: number) => string,
): RequestVerdict {
  if (cancelBlock !== undefined)
    return { request, outcome: 'excused', why: `cancelled by the harness in block ${cancelBlock}` }
  const storm = history.faults.find(
    (fault) => fault.kind === 'cancel-storm' && request.at * 1000 <= fault.toMs,
  )
  if (request.expired && storm)
    return {
      request,
      outcome: 'excused',
      why: `past its expiry by the chain's clock jump in the cancel storm at ${since(storm.fromMs)}`,
    }
  const run = history.runs.get(request.requestId)
  if (!run || !FINAL_FAILURES.has(run.state))
    // Open with no final record: `settled` and `stalled` judge it.
    return { request, outcome: 'unexplained' }
  if (run.state === 'refused' && ADMISSION_REFUSALS.has(run.failureCode ?? ''))
    return {
      request,
      outcome: 'excused',
      why: `refused by requester admission (${run.failureCode}): its requester passed a bound the schedule set`,
    }
  const recovery = recoveryMs(history.lockMs)
  const failedAt = run.at
  const fault = history.faults.find(
    (window) =>
      faultCovers(window, run) &&
      failedAt !== undefined &&
      failedAt >= window.fromMs &&
      failedAt <= window.toMs + recovery,
  )
  const when = failedAt === undefined ? 'at no recorded time' : `at ${since(failedAt)}`
  const failure = `${run.state} (${run.quarantined ? 'quarantined' : (run.failureKind ?? 'no kind')}) ${when}`
  if (fault)
    return {
      request,
      outcome: 'excused',
      why: `${failure}, under the ${fault.label} at ${since(fault.fromMs).replace(' s', '')}-${since(fault.toMs)}`,
    }
  return {
    request,
    outcome: 'unexplained',
    why: `is open on chain: its run ${failure}, a cause no fault covers${run.reason ? `: ${run.reason.slice(0, 200)}` : ''}`,
  }
}

function firstByRequest<T extends { requestId: string; block: number }>(
  events: readonly T[],
): Map<string, T> {
  const first = new Map<string, T>()
  for (const event of events) {
    const known = first.get(event.requestId)
    if (!known || event.block < known.block) first.set(event.requestId, event)
  }
  return first
}
