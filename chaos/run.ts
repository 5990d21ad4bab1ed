import { setTimeout as delay } from 'node:timers/promises'
import { collectHistory } from './collect.ts'
import { restart, type RunContext } from './context.ts'
import { runFault } from './faults.ts'
import type { History, Violation } from './history.ts'
import { checkInvariants } from './invariants.ts'
import { RequestBook } from './request-book.ts'
import { LANE_OF, type FaultPlan, type Schedule } from './schedule.ts'
import { startChaosStack, type ChaosStack } from './stack.ts'

/**
 * After the last request and fault, how long everything may take to settle: a request held by a
 * SIGKILLed runner waits out RUNNER_LOCK_MS (30 s at most here), and a run that failed during a fault
 * is retried after its backoff. What has not settled by then is a finding.
 */
const QUIET_BOUND_MS = 90_000
/** Once settled, how long to watch for late transactions before the history is read for good. */
const AFTER_QUIET_MS = 5_000
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
    for (const part of stack?.parts.values() ?? []) outputs[part.name] = part.output()
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
    note: (line) =>
      gathered.timeline.push(`${((Date.now() - context.startedAt) / 1000).toFixed(1)} s ${line}`),
  }
  await Promise.all([pace(context), ...lanesOf(schedule).map((lane) => runLane(context, lane))])
  await heal(context)
  await stack.wallet.allMined(HARNESS_MINED_MS)
  const quiet = await quiesce(context)
  if (quiet.afterMs !== undefined) gathered.quietAfterMs = quiet.afterMs
  context.stops.push(...(await stack.stopParts()))
  const history: History = {
    ...quiet.history,
    stops: context.stops,
    startFailures: context.startFailures,
    gone: context.gone,
  }
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
    context.note(`${fault.kind} done: ${await runFault(context, fault)}`)
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

/**
 * Waits until every request is answered, cancelled or recorded with its cause, no key has a
 * transaction waiting, and every run record agrees with the chain (or the bound passes); then reads
 * the history once more a little later, so a late second transaction is seen too.
 */
async function quiesce(
  context: RunContext,
): Promise<{ history: Omit<History, 'stops' | 'startFailures' | 'gone'>; afterMs?: number }> {
  const began = Date.now()
  const read = () => collectHistory(context.stack, context.book)
  for (;;) {
    const history = await read()
    const unsettled = checkInvariants({
      ...history,
      stops: [],
      startFailures: [],
      gone: context.gone,
    }).filter((v) => SETTLING.has(v.invariant))
    if (unsettled.length === 0) {
      const afterMs = Date.now() - began
      context.note(`settled ${(afterMs / 1000).toFixed(1)} s after the faults`)
      await delay(AFTER_QUIET_MS)
      return { history: await read(), afterMs }
    }
    if (Date.now() - began > QUIET_BOUND_MS) {
      context.note(`not settled ${QUIET_BOUND_MS / 1000} s after the faults`)
      return { history }
    }
    await delay(2_000)
  }
}
