import { fluxRevertExcuse } from './flux.ts'
import type { History } from './history.ts'
import { revertExcuse } from './fulfilments.ts'
import { livenessOf } from './liveness.ts'
import type { ScheduleResult } from './run.ts'
import { runsRunner, type FaultPlan, type Schedule } from './schedule.ts'

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** The command that runs this schedule again. */
export function replayCommand(seed: number): string {
  return `npm run chaos -- --seed ${seed}`
}

function describeFault(fault: FaultPlan): string {
  const at = seconds(fault.atMs)
  switch (fault.kind) {
    case 'kill':
      return `${at} ${fault.signal} ${fault.part}, down ${seconds(fault.downMs)}`
    case 'redis-restart':
      return `${at} Redis restart (${fault.signal}, down ${seconds(fault.downMs)})`
    case 'redis-flush':
      return `${at} Redis FLUSHALL`
    case 'redis-failover':
      return `${at} Redis replaced by its promoted replica`
    case 'rpc-cut':
      return `${at} RPC cut for ${seconds(fault.forMs)}`
    case 'rpc-slow':
      return `${at} RPC slowed by ${fault.delayMs} ms a call for ${seconds(fault.forMs)}`
    case 'reorg':
      return `${at} reorg of ${fault.depth} block(s), transactions ${{ reinclude: 'mined again', reinject: 'back in the pool', drop: 'dropped' }[fault.txs]}`
    case 'cancel-storm':
      return `${at} cancel storm (runners ${fault.signal}, ${fault.requests.length} requests, clock +${fault.warpSeconds} s, ${fault.cancelShare * 100} % of the others cancelled)`
  }
}

/** The schedule in a few lines: what it runs and which faults it injects when. */
export function describeSchedule(schedule: Schedule): string[] {
  const clocks = schedule.parts
    .filter((part) => part.clockOffsetSeconds !== 0)
    .map(
      (part) =>
        `${part.name} ${part.clockOffsetSeconds > 0 ? '+' : ''}${part.clockOffsetSeconds} s`,
    )
  const runners = schedule.parts.filter((part) => runsRunner(part.kind)).length
  const start = schedule.parts.find((part) => part.kind === 'start')
  return [
    `schedule ${schedule.seed}: ${seconds(schedule.durationMs)}, ${runners} runners${start ? ` (${start.name} is feedrunner start)` : ''}, ${schedule.nodeKeys} key(s), RUNNER_LOCK_MS ${schedule.lockMs}, ${schedule.requests.length} requests${bursts(schedule)}${schedule.cron ? `, a cron job @every ${schedule.cron.everyMs / 1_000}s` : ''}${schedule.flux ? `, a flux feed (heartbeat ${schedule.flux.idleMs / 1_000}s, poll ${schedule.flux.pollMs / 1_000}s)` : ''}, clocks ${clocks.length > 0 ? clocks.join(', ') : 'all true'}`,
    `  faults: ${schedule.faults.map(describeFault).join('; ') || 'none'}`,
  ]
}

/** ' in bursts of N' when requests share their offsets. */
function bursts(schedule: Schedule): string {
  const first = schedule.requests.filter((request) => request.atMs === 0).length
  return first > 1 ? ` in bursts of ${first}` : ''
}

/** What a schedule did and found. */
/** What a node key sends besides fulfilments in this schedule. */
function otherKinds(history: History): string {
  const kinds = ['fillers']
  if (history.cronEveryMs !== undefined) kinds.push('cron writes')
  if (history.flux !== undefined) kinds.push('flux submissions')
  return kinds.join(', ')
}

export function describeResult(result: ScheduleResult): string[] {
  const lines: string[] = []
  const { history } = result
  if (history) {
    const answered = new Set(history.responses.map((response) => response.requestId)).size
    const cancelled = new Set(history.cancels.map((cancel) => cancel.requestId)).size
    const fulfilments = history.signed.filter((tx) => tx.fulfils !== undefined)
    const others = history.signed.length - fulfilments.length
    const reverted = [...new Set(history.signed.map((tx) => tx.hash))].filter(
      (hash) => history.fates.get(hash)?.reverted,
    ).length
    const slots = new Set(fulfilments.map((tx) => `${tx.from}:${tx.nonce}`)).size
    const records = new Map<string, number>()
    for (const run of history.runs.values())
      records.set(run?.state ?? 'none', (records.get(run?.state ?? 'none') ?? 0) + 1)
    lines.push(
      `  outcome: ${history.requests.length} requests on chain, ${answered} answered, ${cancelled} cancelled, ${history.requests.length - answered - cancelled} open; records ${[...records].map(([state, count]) => `${count} ${state}`).join(', ')}`,
      `  sent: ${fulfilments.length} fulfilment broadcasts over ${slots} nonces, ${others} other transactions (${otherKinds(history)}), ${reverted} reverted on chain; ${result.quietAfterMs === undefined ? 'never settled' : `settled in ${seconds(result.quietAfterMs)}`}; ${seconds(result.elapsedMs)} in all`,
      ...describeMined(history),
      ...describeCron(history),
      ...describeFlux(history),
      ...describeLiveness(history),
    )
  }
  for (const line of result.timeline) lines.push(`  | ${line}`)
  for (const violation of result.violations)
    lines.push(
      violation.invariant === 'harness'
        ? `  HARNESS ERROR (the schedule could not be run to its end; counted as a violation): ${violation.detail}`
        : `  VIOLATION ${violation.invariant}: ${violation.detail}`,
    )
  if (result.violations.length > 0) lines.push(`  replay: ${replayCommand(result.schedule.seed)}`)
  return lines
}

/** The last lines each process printed, for a schedule with violations (CHAOS_OUTPUT=1). */
export function describeOutputs(result: ScheduleResult, lines = 15): string[] {
  return Object.entries(result.outputs).flatMap(([name, output]) => [
    `  --- ${name}, last lines:`,
    ...output
      .trim()
      .split('\n')
      .slice(-lines)
      .map((line) => `    ${line.slice(0, 400)}`),
  ])
}

/** Requests answered / made / excused, and the excuse of each one not answered. */
function describeLiveness(history: History): string[] {
  const { verdicts } = livenessOf(history)
  const count = (outcome: string) => verdicts.filter((v) => v.outcome === outcome).length
  return [
    `  requests: ${count('answered')} answered / ${verdicts.length} made / ${count('excused')} excused`,
    ...verdicts
      .filter((verdict) => verdict.outcome !== 'answered')
      .map(
        ({ request, outcome, why }) =>
          `    ${request.purpose} ${request.requestId.slice(0, 10)}: ${outcome === 'excused' ? 'excused' : 'NOT excused'}, ${why ?? 'open with no final run record'}`,
      ),
  ]
}

/** The cron job's writes the chain mined, when the schedule ran one. */
function describeCron(history: History): string[] {
  if (history.cronEveryMs === undefined) return []
  const ticks = new Set(history.pushes.map((push) => push.tick)).size
  const reverted = history.pushes.filter((push) => push.reverted).length
  return [
    `  cron: ${history.pushes.length} tick writes mined for ${ticks} ticks, ${reverted} of them reverted`,
  ]
}

/** The flux feed's rounds and submissions, and each reverted transaction to it with its excuse. */
function describeFlux(history: History): string[] {
  const flux = history.flux
  if (flux === undefined) return []
  const reverted = flux.txs.filter((tx) => tx.reverted)
  return [
    `  flux: ${flux.rounds.length} rounds started, ${flux.submissions.length} submissions, ${flux.txs.length} transactions to the aggregator, ${reverted.length} of them reverted`,
    ...reverted.map(
      (tx) =>
        `    ${tx.hash.slice(0, 10)} (round ${tx.round ?? '-'}, block ${tx.block}): ${fluxRevertExcuse(tx, flux, history) ?? 'NOT excused'}`,
    ),
  ]
}

/** The fulfilments the chain mined, and why each one that reverted is excused, if it is. */
function describeMined(history: History): string[] {
  const reverted = history.fulfilments.filter((tx) => tx.reverted)
  const requests = new Map(history.requests.map((request) => [request.requestId, request]))
  return [
    `  mined: ${history.fulfilments.length} fulfilments from the node keys, ${reverted.length} of them reverted`,
    ...reverted.map((tx) => {
      const request = requests.get(tx.requestId)
      const excuse = revertExcuse(tx, request, history)
      return `    reverted ${tx.hash.slice(0, 10)} (${request?.purpose ?? 'no request'} ${tx.requestId.slice(0, 10)}, block ${tx.block}): ${excuse === undefined ? 'NOT excused' : `excused, ${excuse}`}`
    }),
  ]
}
