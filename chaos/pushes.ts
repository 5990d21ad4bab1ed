import { leasesFromLock } from '../src/runner/retry-policy.ts'
import type { History, PushFact, Violation } from './history.ts'

// A schedule's cron job, read from the chain: every transaction from a node key that writes a tick to
// the schedule's PushedValue, succeeded or reverted (chain-read.ts).

/**
 * Each tick reaches the chain at most once (every mined write counts, a reverted one too: a tick
 * written twice is paid for twice), no write reverts (the writers are the node keys, so a revert is a
 * write the node sent knowing nothing of the chain), and the ticks go on once the faults are over.
 */
export function cronInvariants(history: History): Violation[] {
  if (history.cronEveryMs === undefined) return []
  return [...oneWritePerTick(history), ...noRevertedWrite(history), ...ticksGoOn(history)]
}

function oneWritePerTick(history: History): Violation[] {
  const byTick = new Map<number, PushFact[]>()
  for (const push of history.pushes) byTick.set(push.tick, [...(byTick.get(push.tick) ?? []), push])
  return [...byTick]
    .filter(([, pushes]) => pushes.length > 1)
    .map(([tick, pushes]) => ({
      invariant: 'one-push-per-tick' as const,
      detail: `tick ${atOf(history, tick)} was written ${pushes.length} times: ${pushes.map(describePush).join('; ')}`,
    }))
}

function noRevertedWrite(history: History): Violation[] {
  return history.pushes
    .filter((push) => push.reverted)
    .map((push) => ({
      invariant: 'push-reverted' as const,
      detail: `a write of tick ${atOf(history, push.tick)} reverted: ${describePush(push)}`,
    }))
}

/**
 * The window after the faults in which the cron job must have written a tick: from when the last
 * fault ended plus the longest a dead runner's sender key stays leased (its takeover) and two
 * periods, to two periods before the harness stopped the processes (a tick fired later may not have
 * been signed yet). Undefined while that window is shorter than a period.
 */
export function cronWindow(history: History, until = history.stoppedAt) {
  const every = history.cronEveryMs
  if (every === undefined) return undefined
  const faultsEnded = Math.max(history.startedAt, ...history.faults.map((fault) => fault.toMs))
  const from = faultsEnded + leasesFromLock(history.lockMs).keyLeaseMs + 2 * every
  const to = until - 2 * every
  return to - from < every ? undefined : { from, to, faultsEnded }
}

/** Whether a tick of the window is on chain (the harness waits for it before it stops the stack). */
export function cronCaughtUp(history: History, now: number): boolean {
  const window = cronWindow(history, now)
  return window !== undefined && tickIn(history, window)
}

function ticksGoOn(history: History): Violation[] {
  const written = history.pushes.filter((push) => !push.reverted).map((push) => push.tick)
  const last = written.length > 0 ? atOf(history, Math.max(...written)) : 'none'
  const violations: Violation[] = []
  const before = cronWindowBeforeFaults(history)
  if (before !== undefined && !tickIn(history, before))
    violations.push({
      invariant: 'cron-live',
      detail: `no tick from ${atOf(history, before.from)} to ${atOf(history, before.to)} reached the chain, before any fault (the first began at ${atOf(history, before.to + (history.cronEveryMs ?? 0))}); the last tick written: ${last}`,
    })
  const window = cronWindow(history)
  if (window !== undefined && !tickIn(history, window))
    violations.push({
      invariant: 'cron-live',
      detail: `no tick from ${atOf(history, window.from)} to ${atOf(history, window.to)} reached the chain (the faults ended at ${atOf(history, window.faultsEnded)}); the last tick written: ${last}`,
    })
  return violations
}

/**
 * The window before the first fault in which a healthy stack's cron job must have written a tick:
 * from two periods after the schedule's start (its runners were started before it) to a period
 * before the first fault began (a fault may take the firing of the tick just before it). Undefined
 * while that is shorter than a period.
 */
function cronWindowBeforeFaults(history: History) {
  const every = history.cronEveryMs
  if (every === undefined) return undefined
  const firstFault = Math.min(history.stoppedAt, ...history.faults.map((fault) => fault.fromMs))
  const from = history.startedAt + 2 * every
  const to = firstFault - every
  return to - from < every ? undefined : { from, to }
}

function tickIn(history: History, window: { from: number; to: number }): boolean {
  return history.pushes.some(
    (push) => !push.reverted && push.tick >= window.from && push.tick <= window.to,
  )
}

/** A time as the report tells it: seconds from the schedule's start. */
function atOf(history: History, ms: number): string {
  return `${((ms - history.startedAt) / 1_000).toFixed(1)} s`
}

function describePush(push: PushFact): string {
  return `${push.hash.slice(0, 10)} by key ${push.from.slice(0, 10)} nonce ${push.nonce}, block ${push.block}${push.reverted ? ', reverted' : ''}`
}
