import type { History, OutcomeFact, RequestFact, RunFact, Violation } from './history.ts'
import { describeRequest, oneFulfilmentEach } from './fulfilments.ts'
import { livenessOf } from './liveness.ts'
import { cronInvariants } from './pushes.ts'
import { fluxInvariants } from './flux.ts'

/**
 * The invariants a schedule must leave true, each read from the history alone (the chain's blocks,
 * logs and keys, the transactions the RPC proxy saw, the run records, the faults, how processes
 * exited).
 */
export function checkInvariants(history: History): Violation[] {
  return [
    ...oneFulfilmentEach(history),
    ...eachRequestSettled(history),
    ...livenessOf(history).violations,
    ...oneFulfilmentPerNonce(history),
    ...noNonceGap(history),
    ...recordsAgree(history),
    ...processesBehaved(history),
    ...cronInvariants(history),
    ...fluxInvariants(history),
  ]
}

const short = (id: string) => id.slice(0, 10)

function byRequest(outcomes: readonly OutcomeFact[]): Map<string, OutcomeFact[]> {
  const grouped = new Map<string, OutcomeFact[]>()
  for (const outcome of outcomes) {
    const list = grouped.get(outcome.requestId) ?? []
    list.push(outcome)
    grouped.set(outcome.requestId, list)
  }
  return grouped
}

function describeRun(run: RunFact | undefined, history?: History): string {
  if (!run) return 'no run record'
  const tx = run.txHash?.toLowerCase()
  const fate = tx === undefined ? undefined : history?.fates.get(tx)
  const named =
    tx === undefined
      ? ''
      : ` by ${tx.slice(0, 10)}, ${fate ? `mined in block ${fate.block}${fate.reverted ? ' and reverted' : ''}` : 'not on chain'}`
  return `record ${run.state}${named}${run.reason ? ` (${run.reason.slice(0, 160)})` : ''}`
}

const FINAL = new Set(['fulfilled', 'errored', 'refused', 'cancelled'])

/**
 * Every request is answered before its expiry, with the value it asked for; or cancelled by its
 * consumer; or, still open, recorded final with its cause (whether a fault explains that cause is
 * liveness's to say).
 */
function eachRequestSettled(history: History): Violation[] {
  const violations: Violation[] = []
  const responses = byRequest(history.responses)
  const cancels = byRequest(history.cancels)
  for (const request of history.requests) {
    const id = describeRequest(request)
    const [answer] = responses.get(request.requestId) ?? []
    if (answer) {
      violations.push(...answeredInTime(request, answer, id))
      const value = history.values.get(request.requestId)
      if (request.expected !== undefined && value !== request.expected)
        violations.push({
          invariant: 'right-value',
          detail: `${id} stored ${value ?? 'nothing'}, expected ${request.expected}`,
        })
      continue
    }
    if (cancels.has(request.requestId)) continue
    const run = history.runs.get(request.requestId)
    if (!run || !FINAL.has(run.state) || run.state === 'fulfilled' || !run.reason)
      violations.push({
        invariant: 'settled',
        detail: `${id} is open on chain and not recorded with a cause: ${describeRun(run, history)}`,
      })
  }
  return violations
}

function answeredInTime(request: RequestFact, answer: OutcomeFact, id: string): Violation[] {
  if (answer.at <= request.expiresAt) return []
  return [
    {
      invariant: 'before-expiry',
      detail: `${id} answered ${answer.at - request.expiresAt} s after its expiry (block ${answer.block})`,
    },
  ]
}

/**
 * No key signed two different fulfilments for one nonce (a fee bump of the same one is fine). A
 * transaction a reorg took away for good freed its nonce: it does not count.
 */
function oneFulfilmentPerNonce(history: History): Violation[] {
  const effects = new Map<string, Map<string, string>>()
  for (const tx of history.signed) {
    if (tx.fulfils === undefined || history.gone.has(tx.hash)) continue
    const slot = `${tx.from}:${tx.nonce}`
    const seen = effects.get(slot) ?? new Map<string, string>()
    seen.set(tx.effect, tx.fulfils)
    effects.set(slot, seen)
  }
  const violations: Violation[] = []
  for (const [slot, seen] of effects) {
    if (seen.size < 2) continue
    const [from, nonce] = slot.split(':')
    violations.push({
      invariant: 'one-fulfilment-per-nonce',
      detail: `key ${from!.slice(0, 10)} signed ${seen.size} different fulfilments for nonce ${nonce}: requests ${[...seen.values()].map(short).join(', ')}`,
    })
  }
  return violations
}

/** After quiescence no key has a transaction waiting in the pool behind a nonce never mined. */
function noNonceGap(history: History): Violation[] {
  return history.keys
    .filter((key) => key.latest !== key.pending || key.inPool > 0)
    .map((key) => ({
      invariant: 'no-nonce-gap' as const,
      detail: `key ${key.address.slice(0, 10)}: ${key.latest} mined, ${key.pending} pending, ${key.inPool} in the pool`,
    }))
}

/**
 * A run record, where there is one (Redis may have lost it: it is a cache), says what the chain says:
 * fulfilled by the transaction that answered, or not fulfilled; no run of a closed request still in
 * progress.
 */
function recordsAgree(history: History): Violation[] {
  const violations: Violation[] = []
  const responses = byRequest(history.responses)
  const cancels = byRequest(history.cancels)
  for (const request of history.requests) {
    const run = history.runs.get(request.requestId)
    if (!run) continue
    const answer = responses.get(request.requestId)?.[0]
    const cancelled = cancels.has(request.requestId)
    const id = `request ${short(request.requestId)} (${request.purpose ?? 'not the harness'})`
    const disagree = (chain: string) =>
      violations.push({
        invariant: 'records-agree',
        detail: `${id}: the chain says ${chain}, the ${describeRun(run, history)}`,
      })
    if (answer && run.state !== 'fulfilled') disagree(`answered by ${answer.txHash.slice(0, 10)}`)
    else if (answer && run.txHash && run.txHash.toLowerCase() !== answer.txHash)
      disagree(`answered by ${answer.txHash.slice(0, 10)}, not ${run.txHash.slice(0, 10)}`)
    else if (!answer && run.state === 'fulfilled')
      disagree(cancelled ? 'cancelled' : 'open (no OracleResponse)')
    else if (cancelled && !FINAL.has(run.state)) disagree('cancelled')
  }
  return violations
}

/**
 * Every process runs until the harness stops it, exits within 10 s of SIGTERM, with code 0, and comes
 * back after a fault.
 */
function processesBehaved(history: History): Violation[] {
  const violations: Violation[] = []
  for (const stop of history.stops) {
    if (stop.died) {
      violations.push({
        invariant: 'process-died',
        detail: `${stop.part} had ended by itself (exit code ${stop.code}) before the harness stopped it; it said last: ${lastLines(stop.tail)}`,
      })
      continue
    }
    if (stop.signal !== 'SIGTERM') continue
    if (stop.overran)
      violations.push({
        invariant: 'sigterm-exit',
        detail: `${stop.part} still ran ${Math.round(stop.ms / 1000)} s after SIGTERM (SIGKILLed); it said last: ${lastLine(stop.tail)}`,
      })
    else if (stop.code !== 0)
      violations.push({
        invariant: 'sigterm-exit',
        detail: `${stop.part} exited with code ${stop.code} ${stop.ms} ms after SIGTERM; it said last: ${lastLine(stop.tail)}`,
      })
  }
  for (const failure of history.startFailures)
    violations.push({ invariant: 'restarts', detail: failure })
  return violations
}

/** The last lines of a process that died: its error, without Node's version line. */
function lastLines(text: string | undefined): string {
  const lines = (text ?? '')
    .trim()
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^Node\.js v/.test(line))
  return lines.slice(-6).join(' | ').slice(0, 800)
}

function lastLine(text: string | undefined): string {
  const lines = (text ?? '').trim().split('\n')
  return (lines[lines.length - 1] ?? '').slice(0, 300)
}
