import { setTimeout as delay } from 'node:timers/promises'
import { minableInPool } from './chain-read.ts'
import { collectHistory, type Collected } from './collect.ts'
import { restart, type RunContext } from './context.ts'
import { runTimedFault } from './faults.ts'
import type { History, Violation } from './history.ts'
import { cronCaughtUp } from './pushes.ts'
import { fluxCaughtUp } from './flux.ts'
import { checkInvariants } from './invariants.ts'
import { HEALTHY_OPEN_BOUND_MS, recoveryMs } from './liveness.ts'
import { RequestBook } from './request-book.ts'
import { rpc } from './rpc.ts'
import { KEPT_OUTPUT_CHARS } from './part.ts'
import { LANE_OF, type FaultPlan, type Schedule } from './schedule.ts'
import { startChaosStack, type ChaosStack } from './stack.ts'

/**
 * After the last request and fault, how long everything may take to settle: a request held by a
 * SIGKILLed runner waits out RUNNER_LOCK_MS, and a run that failed during a fault is retried after
 * its backoff (the recovery liveness allows, liveness.ts); a request still open after that and its
 * bound of healthy time is a finding, and the wait goes on long enough to see it.
 */
function quietBoundMs(lockMs: number): number {
  return Math.max(90_000, recoveryMs(lockMs) + HEALTHY_OPEN_BOUND_MS + 10_000)
}
/**
 * Once every process has exited and the RPC proxy is cut, nothing new can reach anvil's pool; what
 * is in it is mined in the next block, unless the block is full (30 M gas: 60 fulfilments at their
 * 500 k limit) or its fee cap is under the base fee (which falls by an eighth with each empty block).
 * So the history is read once the pool holds nothing of the node keys that could still be mined and
 * at least this many blocks were mined after the exits: the first takes in whatever a process handed
 * anvil as it exited, the second is mined after anything that was still on its way then. A
 * transaction left behind a nonce gap can never be mined (no process is left to fill the gap): it
 * is `no-nonce-gap`'s.
 */
const QUIET_BLOCKS = 2
/** How long the pool may take to empty after the exits (a fee cap under the base fee waits for it to fall). */
const QUIET_WATCH_BOUND_MS = 60_000
/** How long the harness's own transactions may take to be mined once the faults are over. */
const HARNESS_MINED_MS = 90_000

export interface ScheduleResult {
  schedule: Schedule
  /** What was done when, seconds from the start of the schedule. */
  timeline: string[]
  history?: History
  violations: Violation[]
  /** How long the stack took to settle after the faults (undefined: it did not within the bound). */
  quietAfterMs?: number
  /** Wall time of the whole schedule, setup and teardown included. */
  elapsedMs: number
  /** The last output of each process, for a schedule with violations. */
  outputs: Record<string, string>
}

/** What a schedule has gathered so far (the watchdog may end it at any point). */
interface Gathered {
  timeline: string[]
  violations: Violation[]
  stackStarting?: Promise<ChaosStack>
  history?: History
  quietAfterMs?: number
}

/**
 * No schedule runs longer than its length and this: starting (a minute or two on a loaded machine),
 * the harness's transactions, settling and stopping each have bounds of their own well inside it.
 */
const SCHEDULE_SLACK_MS = 8 * 60_000

/** Runs one schedule on a stack of its own and checks the invariants on what it left. */
export async function runSchedule(schedule: Schedule): Promise<ScheduleResult> {
  const began = Date.now()
  const gathered: Gathered = { timeline: [], violations: [] }
  const outputs: Record<string, string> = {}
  let watchdog: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      runOnStack(schedule, gathered),
      new Promise<never>((_, reject) => {
        const boundMs = schedule.durationMs + SCHEDULE_SLACK_MS
        watchdog = setTimeout(
          () => reject(new Error(`the schedule ran past its bound of ${boundMs / 1000} s`)),
          boundMs,
        )
      }),
    ])
  } catch (error) {
    const detail = (error as Error).stack ?? String(error)
    gathered.violations.push({ invariant: 'harness', detail })
  } finally {
    clearTimeout(watchdog)
    const stack = await gathered.stackStarting?.catch(() => undefined)
    for (const part of stack?.parts.values() ?? [])
      outputs[part.name] = part.output(KEPT_OUTPUT_CHARS)
    await stack?.stop().catch(() => undefined)
  }
  const { timeline, violations, history, quietAfterMs } = gathered
  return {
    schedule,
    timeline,
    ...(history ? { history } : {}),
    violations,
    ...(quietAfterMs === undefined ? {} : { quietAfterMs }),
    elapsedMs: Date.now() - began,
    outputs,
  }
}

/** The stack of the schedule running now, for an interrupted harness to stop. */
let running: Promise<ChaosStack> | undefined

/** Stops the running schedule's stack (processes, proxies, anvil, Redis and its files), if any. */
export async function stopRunningStack(): Promise<void> {
  const stack = await running?.catch(() => undefined)
  await stack?.stop().catch(() => undefined)
}

async function runOnStack(schedule: Schedule, gathered: Gathered): Promise<void> {
  gathered.stackStarting = startChaosStack(schedule)
  running = gathered.stackStarting
  const stack = await gathered.stackStarting
  const book = new RequestBook(stack.wallet, stack.externalJobId)
  const context: RunContext = {
    stack,
    schedule,
    book,
    startedAt: Date.now(),
    stops: [],
    startFailures: [],
    gone: new Set(),
    faults: [],
    note: (line) =>
      gathered.timeline.push(`${((Date.now() - context.startedAt) / 1000).toFixed(1)} s ${line}`),
  }
  await Promise.all([pace(context), ...lanesOf(schedule).map((lane) => runLane(context, lane))])
  await heal(context)
  await stack.wallet.allMined(HARNESS_MINED_MS)
  const afterMs = await quiesce(context)
  if (afterMs !== undefined) gathered.quietAfterMs = afterMs
  const stoppedAt = Date.now()
  context.stops.push(...(await stack.stopParts()))
  await watchUntilQuiet(context)
  const history = historyOf(context, await collectHistory(stack, book), stoppedAt)
  gathered.history = history
  gathered.violations.push(...checkInvariants(history))
}

/** Sends each planned request at its offset. */
async function pace(context: RunContext): Promise<void> {
  for (const [index, plan] of context.schedule.requests.entries()) {
    await delay(Math.max(0, context.startedAt + plan.atMs - Date.now()))
    await context.book.send(plan, `request:${index}`)
  }
  context.note(`${context.schedule.requests.length} requests sent`)
}

function lanesOf(schedule: Schedule): FaultPlan[][] {
  const lanes = new Map<string, FaultPlan[]>()
  for (const fault of schedule.faults) {
    const lane = lanes.get(LANE_OF[fault.kind]) ?? []
    lane.push(fault)
    lanes.set(LANE_OF[fault.kind], lane)
  }
  return [...lanes.values()]
}

/** Runs a lane's faults in order, each at its offset or, if the one before ran late, right after it. */
async function runLane(context: RunContext, faults: readonly FaultPlan[]): Promise<void> {
  for (const fault of faults) {
    await delay(Math.max(0, context.startedAt + fault.atMs - Date.now()))
    context.note(`${fault.kind} begins`)
    context.note(`${fault.kind} done: ${await runTimedFault(context, fault)}`)
  }
}

/** Every fault undone: the RPC link whole, every process running. */
async function heal(context: RunContext): Promise<void> {
  context.stack.rpcProxy.restore()
  const down = [...context.stack.parts.values()].filter((part) => !part.running)
  if (down.length > 0) context.note(`started again after the faults: ${down.map((p) => p.name)}`)
  await Promise.all(down.map((part) => restart(context, part)))
}

/** Invariants that hold once the stack has settled; until then the history is read again. */
const SETTLING: ReadonlySet<Violation['invariant']> = new Set([
  'settled',
  'no-nonce-gap',
  'records-agree',
])

/** What was collected, with what the harness did. */
function historyOf(context: RunContext, collected: Collected, stoppedAt = Date.now()): History {
  return {
    ...collected,
    stoppedAt,
    stops: context.stops,
    startFailures: context.startFailures,
    gone: context.gone,
    faults: context.faults,
    lockMs: context.schedule.lockMs,
    startedAt: context.startedAt,
    ...(context.schedule.cron ? { cronEveryMs: context.schedule.cron.everyMs } : {}),
  }
}

/**
 * Waits until every request is answered, cancelled or recorded with its cause, no key has a
 * transaction waiting, and every run record agrees with the chain (or the bound passes); answers how
 * long that took, undefined when it did not happen within the bound.
 */
async function quiesce(context: RunContext): Promise<number | undefined> {
  const began = Date.now()
  const boundMs = quietBoundMs(context.schedule.lockMs)
  for (;;) {
    const history = historyOf(context, await collectHistory(context.stack, context.book))
    const unsettled = checkInvariants({ ...history, stops: [], startFailures: [] }).filter((v) =>
      SETTLING.has(v.invariant),
    )
    // A schedule with a cron job also waits for a tick written after the faults (cron-live).
    const cronWaits = history.cronEveryMs !== undefined && !cronCaughtUp(history, Date.now())
    // And a schedule with a flux feed for a round started after them (flux-live).
    const fluxWaits = !fluxCaughtUp(history, Date.now())
    if (unsettled.length === 0 && !cronWaits && !fluxWaits) {
      const afterMs = Date.now() - began
      context.note(`settled ${(afterMs / 1000).toFixed(1)} s after the faults`)
      return afterMs
    }
    if (Date.now() - began > boundMs) {
      context.note(`not settled ${boundMs / 1000} s after the faults`)
      return undefined
    }
    await delay(2_000)
  }
}

/**
 * Once every process has exited: cuts the RPC proxy, so nothing a process began can still reach the
 * chain, and waits until the chain has mined what the pool held of the node keys (QUIET_BLOCKS).
 * Under automine the harness mines the blocks itself.
 */
async function watchUntilQuiet(context: RunContext): Promise<void> {
  const { stack, schedule } = context
  stack.rpcProxy.cut()
  const anvilUrl = stack.anvil.rpcUrl
  const blockNumber = async () => Number(await rpc<string>(anvilUrl, 'eth_blockNumber'))
  const exitHead = await blockNumber()
  const began = Date.now()
  for (;;) {
    const mined = (await blockNumber()) - exitHead
    const waiting = await minableInPool(anvilUrl, stack.nodeAddresses)
    if (mined >= QUIET_BLOCKS && waiting === 0) {
      context.note(
        `quiet: ${mined} blocks mined after every process exited, none of their transactions left to mine`,
      )
      return
    }
    if (Date.now() - began > QUIET_WATCH_BOUND_MS) {
      context.note(
        `not quiet ${QUIET_WATCH_BOUND_MS / 1000} s after the exits: ${waiting} transactions of the node keys in the pool`,
      )
      return
    }
    if (schedule.blockTimeSeconds === 0) await rpc(anvilUrl, 'evm_mine')
    else await delay(250)
  }
}
