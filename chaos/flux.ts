import type { FluxFacts, FluxTxFact, History, Violation } from './history.ts'
import { leasesFromLock } from '../src/runner/retry-policy.ts'
import { reorgAfterSend } from './fulfilments.ts'
import { healthyStretches } from './liveness.ts'

// A schedule's flux feed, read from the chain: the aggregator's SubmissionReceived and NewRound
// logs, and every transaction a node key sent the aggregator, succeeded or reverted (flux-read.ts).

/**
 * How much later than the heartbeat a round may start with the stack healthy. The monitor sees the
 * heartbeat due at its first look past it (every 0.5 s), reads the round's state, fetches the value
 * within the bridge's timeout (the poll period, 2 s) and sends; the submission is in the next block
 * (1 s). 10 s is about three times that, for a loaded two-core machine.
 */
export const HEARTBEAT_SLACK_MS = 10_000

/**
 * How long after a fault the feed may still be catching up: a runner stopped with the oracle key
 * leaves it leased for the key lease (min(RUNNER_LOCK_MS, 15 s)) before another process's monitor
 * takes it and looks; 10 s more for a key whose state Redis lost to wait for the pool to be mined.
 * Nothing else holds a heartbeat back: the monitor looks again at every tick, without a backoff.
 */
export function fluxRecoveryMs(lockMs: number): number {
  return leasesFromLock(lockMs).keyLeaseMs + 10_000
}

/**
 * No oracle submitted twice to a round (the aggregator's own logs), every submission carries the
 * value the feed service has, no transaction a node key sent the aggregator reverted unless the
 * chain explains it, and the heartbeat was met while the stack was healthy.
 */
export function fluxInvariants(history: History): Violation[] {
  const flux = history.flux
  if (flux === undefined) return []
  return [
    ...onePerRound(flux),
    ...rightValue(flux),
    ...noRevertedSubmission(history, flux),
    ...heartbeatMet(history, flux),
  ]
}

function onePerRound(flux: FluxFacts): Violation[] {
  const byOracle = new Map<string, string[]>()
  for (const s of flux.submissions) {
    const key = `${s.round}:${s.oracle}`
    byOracle.set(key, [...(byOracle.get(key) ?? []), `${short(s.txHash)} block ${s.block}`])
  }
  return [...byOracle]
    .filter(([, txs]) => txs.length > 1)
    .map(([key, txs]) => {
      const [round, oracle] = key.split(':')
      return {
        invariant: 'flux-one-per-round' as const,
        detail: `oracle ${short(oracle!)} submitted ${txs.length} times to round ${round}: ${txs.join('; ')}`,
      }
    })
}

function rightValue(flux: FluxFacts): Violation[] {
  return flux.submissions
    .filter((s) => s.value !== flux.expected)
    .map((s) => ({
      invariant: 'flux-value' as const,
      detail: `oracle ${short(s.oracle)} submitted ${s.value} to round ${s.round} (${short(s.txHash)}); the feed service has ${flux.expected}`,
    }))
}

function noRevertedSubmission(history: History, flux: FluxFacts): Violation[] {
  return flux.txs
    .filter((tx) => tx.reverted && fluxRevertExcuse(tx, flux, history) === undefined)
    .map((tx) => ({
      invariant: 'flux-reverted' as const,
      detail: `a transaction to the aggregator reverted, and neither another oracle's submission after the head it was sent at nor a reorg explains it: ${describeTx(tx)}`,
    }))
}

/**
 * Why a reverted transaction to the aggregator is one the node could not have avoided, or
 * undefined. The node simulates each submission just before signing it, so only a change its
 * simulation could not see explains a revert: a submission of another oracle key mined after the
 * head it was sent at and before it (it started or answered a round, so this one's round was no
 * longer open to it), or a reorg that ended after it was sent and replaced blocks up to where it was
 * mined (the chain it was simulated on is gone). Bytes a reorg dropped for good and that were mined
 * later were sent again by the node after the reorg, knowing: no excuse.
 */
export function fluxRevertExcuse(
  tx: FluxTxFact,
  flux: FluxFacts,
  history: History,
): string | undefined {
  const head = tx.sentAtHead
  const other = flux.txs.find(
    (prior) =>
      head !== undefined &&
      !prior.reverted &&
      prior.from !== tx.from &&
      prior.block > head &&
      (prior.block < tx.block || (prior.block === tx.block && prior.index < tx.index)),
  )
  if (other)
    return `oracle ${short(other.from)}'s ${short(other.hash)} was mined in block ${other.block}, after head ${head}`
  const reorg = reorgAfterSend(tx, history)
  return reorg && `the reorg from block ${reorg.fromBlock} ended after it was sent`
}

/**
 * Between two round starts (and from the schedule's start to the first, and from the last to when
 * the processes were stopped), no stretch with the stack healthy (no fault, nor the recovery after
 * one, fluxRecoveryMs) is longer than the heartbeat and its slack: the node starts a round on time
 * whenever nothing keeps it from doing so. Times are the rounds' block times with the chain's clock
 * jumps taken out, on the harness's clock.
 */
function heartbeatMet(history: History, flux: FluxFacts): Violation[] {
  const bound = flux.idleMs + HEARTBEAT_SLACK_MS
  const starts = flux.rounds
    .map((round) => round.at * 1000)
    .filter((at) => at <= history.stoppedAt)
    .sort((a, b) => a - b)
  const before = starts.filter((at) => at <= history.startedAt)
  const marks = [
    before.at(-1) ?? history.startedAt,
    ...starts.filter((at) => at > history.startedAt),
    history.stoppedAt,
  ]
  const recovery = fluxRecoveryMs(history.lockMs)
  const violations: Violation[] = []
  for (let index = 1; index < marks.length; index++) {
    const [from, to] = [marks[index - 1]!, marks[index]!]
    const longest = healthyStretches(from, to, history.faults, recovery).reduce(
      (best, stretch) => (stretch[1] - stretch[0] > best[1] - best[0] ? stretch : best),
      [0, 0] as readonly [number, number],
    )
    if (longest[1] - longest[0] > bound)
      violations.push({
        invariant: 'flux-live',
        detail: `no round started from ${at(history, longest[0])} to ${at(history, longest[1])} with the stack healthy (${seconds(longest[1] - longest[0])}; heartbeat ${seconds(flux.idleMs)}, bound ${seconds(bound)}); ${index < marks.length - 1 ? `the next round started at ${at(history, to)}` : 'no round after it before the stop'}`,
      })
  }
  return violations
}

/**
 * Whether a round started once the faults and their recovery were over (the harness waits for one
 * before it stops the stack, so the time after the faults is there to judge). True when the window
 * after them is already longer than the heartbeat's bound: then flux-live judges it as it is.
 */
export function fluxCaughtUp(history: History, now: number): boolean {
  const flux = history.flux
  if (flux === undefined) return true
  const faultsEnded = Math.max(history.startedAt, ...history.faults.map((fault) => fault.toMs))
  const healthyFrom = faultsEnded + fluxRecoveryMs(history.lockMs)
  if (now - healthyFrom > flux.idleMs + HEARTBEAT_SLACK_MS) return true
  return flux.rounds.some((round) => round.at * 1000 >= healthyFrom)
}

const short = (hex: string) => hex.slice(0, 10)
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const at = (history: History, ms: number) => seconds(ms - history.startedAt)

function describeTx(tx: FluxTxFact): string {
  const call = tx.round === undefined ? 'not a submit' : `submit to round ${tx.round}`
  const sent =
    tx.sentAtHead === undefined ? 'never seen by the proxy' : `sent at head ${tx.sentAtHead}`
  return `${short(tx.hash)} by key ${short(tx.from)} nonce ${tx.nonce}, ${call}, ${sent}, block ${tx.block}`
}
