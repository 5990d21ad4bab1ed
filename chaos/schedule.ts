import type { ReorgTxs } from './chain-faults.ts'
import { Random } from './random.ts'
import { GAME_COUNT, ODDS_LINES, type OddsLine } from './catalog.ts'

/**
 * A schedule: everything one run of the fault search does, drawn from its seed alone. Running it
 * twice with the same seed makes the same requests at the same offsets and the same faults at the
 * same offsets; what the processes do in between is theirs.
 */
export interface Schedule {
  seed: number
  /** How long requests are made and faults injected, from the first request. */
  durationMs: number
  /** Seconds between anvil's blocks; 0 mines a block per transaction (anvil's automine). */
  blockTimeSeconds: number
  /** Sender keys (anvil's accounts 1..n), all authorised on the Operator, shared by every runner. */
  nodeKeys: number
  /** The runners' RUNNER_LOCK_MS: quick takeovers, or the default. */
  lockMs: number
  parts: PartPlan[]
  /** Consumer contracts that make the requests, each a requester of its own to the runners. */
  requesters: number
  /** The runners' per-requester bounds: met and passed by requester 0, never passed per minute by the others. */
  admission: AdmissionPlan
  requests: RequestPlan[]
  faults: FaultPlan[]
  /**
   * A cron job writing each tick to a PushedValue beside the requests, through the same keys, when
   * set: its period. Drawn from a stream of its own, so the rest of a seed's schedule stays as it was.
   */
  cron?: { everyMs: number }
  /**
   * A fluxmonitor job beside the requests, when set: a FluxAggregator whose oracles are the node
   * keys, fed the odds of one game (a value that stays still, so rounds come from the first poll, the
   * heartbeat and the rounds another oracle key starts). Drawn from a stream of its own, after every
   * other draw, so a seed's other draws are as they were without it.
   */
  flux?: FluxPlan
}

export interface FluxPlan {
  /** idleTimerPeriod: the heartbeat, counted from the latest round's start. */
  idleMs: number
  /** pollTimerPeriod. */
  pollMs: number
  /** The game and odds line fed (the value times 100, as the requests ask it). */
  game: number
  line: OddsLine
}

/** REQUESTER_MAX_CONCURRENT_RUNS and REQUESTER_MAX_REQUESTS_PER_MINUTE of every runner. */
export interface AdmissionPlan {
  maxConcurrentRuns: number
  maxRequestsPerMinute: number
}

/** `start` is a runner with its own adapter and fetch workers in one process (`feedrunner start`). */
export type PartKind = 'runner' | 'start' | 'adapter' | 'worker' | 'feeds'

/** Whether a part runs a runner (and so holds requests and keys). */
export function runsRunner(kind: PartKind): boolean {
  return kind === 'runner' || kind === 'start'
}

export interface PartPlan {
  /** `runner-1`, `adapter`, ...: how faults and reports name the process. */
  name: string
  kind: PartKind
  /** Its wall clock's offset from the host's (libfaketime); 0 runs it without faketime. */
  clockOffsetSeconds: number
}

export interface RequestPlan {
  /** When it is sent, from the start of the schedule. */
  atMs: number
  /** Index into the EPL games of the feed service's data set. */
  game: number
  line: OddsLine
  /** Which of the schedule's consumers makes it (0 is the busiest). */
  requester: number
}

export type Signal = 'SIGTERM' | 'SIGKILL'

export type FaultPlan =
  | { kind: 'kill'; atMs: number; part: string; signal: Signal; downMs: number }
  | { kind: 'redis-restart'; atMs: number; signal: Signal; downMs: number }
  | { kind: 'redis-flush'; atMs: number }
  | { kind: 'redis-failover'; atMs: number }
  | { kind: 'rpc-cut'; atMs: number; forMs: number }
  | { kind: 'rpc-slow'; atMs: number; forMs: number; delayMs: number }
  | { kind: 'reorg'; atMs: number; depth: number; txs: ReorgTxs }
  | {
      kind: 'cancel-storm'
      atMs: number
      /** How every runner is stopped. */
      signal: Signal
      /** Requests made while the runners are down, all cancelled once expired. */
      requests: RequestPlan[]
      /** How far the chain's clock jumps (past the Operator's 5-minute expiry). */
      warpSeconds: number
      /** The share of the other requests still open then that are cancelled too. */
      cancelShare: number
    }

export type FaultKind = FaultPlan['kind']

/** Faults of one lane run one after another; lanes run side by side. */
export const LANE_OF: Record<FaultKind, 'process' | 'redis' | 'rpc' | 'chain'> = {
  kill: 'process',
  'cancel-storm': 'process',
  'redis-restart': 'redis',
  'redis-flush': 'redis',
  'redis-failover': 'redis',
  'rpc-cut': 'rpc',
  'rpc-slow': 'rpc',
  reorg: 'chain',
}

/** Clock offsets a process may get (seconds): a host whose clock drifted, either way. */
const CLOCK_OFFSETS = [-300, -120, -45, 45, 120, 300] as const

const FAULT_WEIGHTS: ReadonlyArray<readonly [FaultKind, number]> = [
  ['kill', 6],
  ['redis-restart', 2],
  ['redis-flush', 2],
  ['redis-failover', 2],
  ['rpc-cut', 2],
  ['rpc-slow', 2],
  ['reorg', 3],
  ['cancel-storm', 2],
]

/** No fault starts before this (the first requests are under way) nor this close to the end. */
const FAULT_MARGIN_MS = 3_000

/** Draws the schedule of `seed`. Pure: the same seed always gives an equal schedule. */
export function scheduleOf(seed: number): Schedule {
  const root = new Random(seed)
  const shape = root.fork('shape')
  const durationMs = shape.int(30, 60) * 1_000
  const runners = shape.int(2, 3)
  const parts = partsOf(root.fork('clocks'), runners, root.fork('layout').chance(0.3))
  const requests = requestsOf(root.fork('requests'), durationMs)
  const faults = faultsOf(root.fork('faults'), durationMs, parts)
  return {
    seed,
    durationMs,
    blockTimeSeconds: 1,
    nodeKeys: shape.int(1, 2),
    lockMs: shape.pick([5_000, 30_000]),
    parts,
    ...requestersOf(root.fork('requesters'), requests, faults),
    requests,
    faults,
    ...(root.fork('cron').chance(CRON_SHARE) ? { cron: { everyMs: CRON_EVERY_MS } } : {}),
    ...fluxOf(root.fork('flux')),
  }
}

/** The share of schedules with a flux job, its heartbeats and its poll period. */
const FLUX_SHARE = 0.5
const FLUX_IDLE_MS = [5_000, 8_000] as const
const FLUX_POLL_MS = 2_000

function fluxOf(random: Random): Pick<Schedule, 'flux'> {
  if (!random.chance(FLUX_SHARE)) return {}
  const idleMs = random.pick(FLUX_IDLE_MS)
  return { flux: { idleMs, pollMs: FLUX_POLL_MS, ...requestParams(random) } }
}

/** The share of schedules with a cron job beside their requests, and its period. */
const CRON_SHARE = 0.5
const CRON_EVERY_MS = 2_000

/** The share of the requests the busiest requester makes; the others share the rest evenly. */
const BUSIEST_SHARE = 0.6

/**
 * Who makes each request (paced and storm ones: filled in here, from a stream of its own, so the
 * requests and faults drawn before stay as they were), and the per-requester bounds: 3 or 4
 * requesters; REQUESTER_MAX_REQUESTS_PER_MINUTE below what the busiest one makes in the schedule
 * (all of it within about a minute) and above what any other makes in all; REQUESTER_MAX_CONCURRENT_RUNS
 * one that the busiest meets in steady going and every requester passes when a backlog starts at
 * once (after a runner outage, a burst). Not much lower: a refusal is final, and each refused request
 * is one the faults no longer act on.
 */
function requestersOf(
  random: Random,
  requests: RequestPlan[],
  faults: readonly FaultPlan[],
): Pick<Schedule, 'requesters' | 'admission'> {
  const requesters = random.int(3, 4)
  const storms = faults.flatMap((fault) => (fault.kind === 'cancel-storm' ? fault.requests : []))
  const made = new Array<number>(requesters).fill(0)
  for (const request of [...requests, ...storms]) {
    request.requester = random.chance(BUSIEST_SHARE) ? 0 : random.int(1, requesters - 1)
    made[request.requester]! += 1
  }
  const [busiest = 0, ...others] = made
  const quietest = Math.max(0, ...others) + 1
  const perMinute = Math.floor(busiest * random.pick([0.6, 0.8]))
  return {
    requesters,
    admission: {
      maxConcurrentRuns: random.pick([12, 20]),
      maxRequestsPerMinute: Math.max(quietest, perMinute),
    },
  }
}

/** With `withStart`, the last runner is a `feedrunner start` process. */
function partsOf(random: Random, runners: number, withStart: boolean): PartPlan[] {
  const offset = (probability: number) =>
    random.chance(probability) ? random.pick(CLOCK_OFFSETS) : 0
  return [
    ...Array.from({ length: runners }, (_, index) => ({
      name: `runner-${index + 1}`,
      kind: withStart && index === runners - 1 ? ('start' as const) : ('runner' as const),
      clockOffsetSeconds: offset(0.35),
    })),
    { name: 'adapter', kind: 'adapter', clockOffsetSeconds: offset(0.15) },
    { name: 'worker', kind: 'worker', clockOffsetSeconds: offset(0.15) },
    { name: 'feeds', kind: 'feeds', clockOffsetSeconds: 0 },
  ]
}

/** Requests at a steady rate (1 to 3 a second), or in bursts (10 to 40 every 8 to 15 s). */
function requestsOf(random: Random, durationMs: number): RequestPlan[] {
  const times: number[] = []
  if (random.chance(0.3)) {
    const everyMs = random.int(8, 15) * 1_000
    const size = random.int(10, 40)
    for (let atMs = 0; atMs < durationMs; atMs += everyMs)
      for (let index = 0; index < size; index++) times.push(atMs)
  } else {
    const perSecond = random.pick([1, 1.5, 2, 3])
    const count = Math.floor((durationMs / 1_000) * perSecond)
    for (let index = 0; index < count; index++) times.push(Math.round((index * 1_000) / perSecond))
  }
  return times.map((atMs) => ({ atMs, ...requestParams(random) }))
}

/** A request's question; its requester is drawn once every request is (requestersOf). */
function requestParams(random: Random): Omit<RequestPlan, 'atMs'> {
  return { game: random.int(0, GAME_COUNT - 1), line: random.pick(ODDS_LINES), requester: 0 }
}

/** Faults at random offsets, each lane's spaced by how long its previous fault lasts. */
function faultsOf(random: Random, durationMs: number, parts: readonly PartPlan[]): FaultPlan[] {
  const count = random.int(2, 6)
  const laneFreeAt = new Map<string, number>()
  const faults: FaultPlan[] = []
  for (let drawn = 0; drawn < count; drawn++) {
    let kind = random.weighted(FAULT_WEIGHTS)
    // One clock jump a schedule: a second storm would only repeat the first.
    if (kind === 'cancel-storm' && faults.some((fault) => fault.kind === kind)) kind = 'kill'
    const lane = LANE_OF[kind]
    const earliest = Math.max(FAULT_MARGIN_MS, laneFreeAt.get(lane) ?? 0)
    const latest = durationMs - FAULT_MARGIN_MS
    if (earliest > latest) continue
    const atMs = random.int(earliest, Math.min(latest, earliest + durationMs / 2))
    const fault = faultOf(random, kind, atMs, parts)
    faults.push(fault)
    laneFreeAt.set(lane, atMs + expectedLengthMs(fault) + 2_000)
  }
  return faults.sort((a, b) => a.atMs - b.atMs)
}

function faultOf(
  random: Random,
  kind: FaultKind,
  atMs: number,
  parts: readonly PartPlan[],
): FaultPlan {
  const signal = (): Signal => random.pick(['SIGTERM', 'SIGKILL'] as const)
  switch (kind) {
    case 'kill':
      return {
        kind,
        atMs,
        part: random.weighted(parts.map((part) => [part.name, runsRunner(part.kind) ? 3 : 1])),
        signal: signal(),
        downMs: random.int(500, 8_000),
      }
    case 'redis-restart':
      return { kind, atMs, signal: signal(), downMs: random.int(500, 6_000) }
    case 'redis-flush':
    case 'redis-failover':
      return { kind, atMs }
    case 'rpc-cut':
      return { kind, atMs, forMs: random.int(1_000, 10_000) }
    case 'rpc-slow':
      return { kind, atMs, forMs: random.int(3_000, 15_000), delayMs: random.int(100, 1_500) }
    case 'reorg':
      return {
        kind,
        atMs,
        depth: random.int(1, 3),
        txs: random.pick(['reinclude', 'reinject', 'drop'] as const),
      }
    case 'cancel-storm':
      return {
        kind,
        atMs,
        signal: signal(),
        requests: Array.from({ length: random.int(3, 8) }, () => ({
          atMs: 0,
          ...requestParams(random),
        })),
        warpSeconds: random.int(301, 420),
        cancelShare: random.pick([0, 0.5, 1]),
      }
  }
}

/** About how long a fault holds its lane (a process also takes a few seconds to start again). */
function expectedLengthMs(fault: FaultPlan): number {
  switch (fault.kind) {
    case 'kill':
      return fault.downMs + 5_000
    case 'redis-restart':
      return fault.downMs + 2_000
    case 'redis-flush':
    case 'reorg':
      return 1_000
    case 'redis-failover':
      return 3_000
    case 'rpc-cut':
    case 'rpc-slow':
      return fault.forMs
    case 'cancel-storm':
      return 20_000
  }
}
