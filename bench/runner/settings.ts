/**
 * The bench's settings, from the environment (and N from the first argument), checked once: every
 * other module of `bench/runner/` reads them from here.
 */
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'

/** `--against <git-ref>` (or `--against=<git-ref>`): the reference commit the runner phases alternate with. */
function againstArgument(args: readonly string[]): { ref?: string; rest: string[] } {
  const rest: string[] = []
  let ref: string | undefined
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string
    if (arg === '--against') ref = args[++index] ?? ''
    else if (arg.startsWith('--against=')) ref = arg.slice('--against='.length)
    else rest.push(arg)
  }
  return { ref, rest }
}
const ARGS = againstArgument(process.argv.slice(2))
export const AGAINST = ARGS.ref
/** BENCH_AGAINST_PAIRS: how many pairs of each runner phase `--against` runs (default 2). */
export const AGAINST_PAIRS = Number(process.env.BENCH_AGAINST_PAIRS ?? 2)
/**
 * BENCH_AGAINST_WARMUP=w: with `--against`, each runner first answers a burst of w requests of its
 * own before the measured N (default 0: cold, as the other runner phases).
 */
export const AGAINST_WARMUP = Number(process.env.BENCH_AGAINST_WARMUP ?? 0)
/**
 * BENCH_AGAINST_REUSE_BUILD=0: build the reference from nothing (tsc and solc), even where this
 * checkout's `dist/` and compiled contracts are the same build (default 1: seed it with them).
 */
export const AGAINST_REUSE_BUILD = process.env.BENCH_AGAINST_REUSE_BUILD !== '0'
export const N = Number(ARGS.rest[0] ?? process.env.BENCH_REQUESTS ?? 1_000)
export const KEY_COUNTS = (process.env.BENCH_KEYS ?? '1,4')
  .split(',')
  .filter((item) => item.trim() !== '')
  .map(Number)
export const PACED_RATE = Number(process.env.BENCH_RATE ?? 50)
export const PACED_SECONDS = Number(process.env.BENCH_PACED_SECONDS ?? 10)
export const PACED_COUNT = Math.round(PACED_RATE * PACED_SECONDS)
/** `1` counts every Redis command by what sent it, through MONITOR (which costs Redis CPU). */
export const REDIS_SOURCES = process.env.BENCH_REDIS_SOURCES === '1'
/**
 * `1` counts the JSON-RPC calls each phase's anvil serves, by method, from anvil's own log (which
 * costs anvil CPU, so the CPU figures of such a run are not comparable).
 */
export const RPC_CALLS = process.env.BENCH_RPC_CALLS === '1'
/** `0` leaves the bare-fulfiller phase out (its figures and the ratios against it are then missing). */
export const BARE = process.env.BENCH_BARE !== '0'
/**
 * Fulfilments per JSON-RPC batch in the baseline, the window that gave the highest rate. Measured
 * (1,000 fulfilments of 1,000 open requests on a fresh chain, shared 2-core machine): one per call
 * 24-42/s (a block per transaction at ~30 ms each); the previous 16 concurrent calls 87-100/s; ordered
 * batches of 16 ~200/s, 64 220-390/s, 256 715-920/s with no flush; all 1,000 in one batch 540-580/s,
 * because anvil left part of it in its pool (3 flushes by the pool backstop, each after 300 ms idle).
 */
export const BASELINE_WINDOW = Number(process.env.BENCH_BASELINE_WINDOW ?? 256)
/**
 * Requests per JSON-RPC batch in the burst phases ("as fast as the consumer can": 1,000 requests on a
 * fresh chain went in at 240-360/s, against 58-70/s one per call). A call is answered once its requests
 * are mined, so at most this many of them wait in anvil's pool, fewer than fit one block (30M block
 * gas / 600k gas limit = 50): a batch does not leave requests behind.
 */
export const REQUEST_WINDOW = 32
/**
 * `ws` or `http`: the RPC_URL the runner gets. Over ws its listener is woken by each new head instead
 * of polling every CHAIN_POLL_INTERVAL_MS (its sender still uses http). Measured on the paced phase at
 * 5/s: block -> received p50 11-14 ms over ws, 81-91 ms over http, latency p50 43-58 ms against
 * 127-143 ms; at 20/s, with the runner near saturation on a shared 2-core machine, the two were within
 * the noise (p50 150-580 ms either way). ws is never worse, so it is the default.
 */
export const RUNNER_RPC = process.env.BENCH_RUNNER_RPC ?? 'ws'
/** Extra anvil arguments for every phase's chain, e.g. `--hardfork prague` (the dev chain runs Cancun). */
export const ANVIL_ARGS = (process.env.BENCH_ANVIL_ARGS ?? '').split(' ').filter(Boolean)
export const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info'
/** Node flags for each runner process, e.g. `--max-old-space-size=256` (NODE_OPTIONS would reach every process). */
export const RUNNER_NODE_ARGS = (process.env.BENCH_RUNNER_NODE_ARGS ?? '')
  .split(' ')
  .filter(Boolean)
/**
 * BENCH_PAIRS=k: k more pairs of the bare fulfiller and the one-key burst after the phases, one after
 * the other, so the two ratio targets are read over alternating pairs within one run (default 0).
 */
export const PAIRS = Number(process.env.BENCH_PAIRS ?? 0)
/**
 * BENCH_WARMUP=w: after the cold phases, the bare fulfiller and the one-key burst once more, each
 * process answering a burst of w requests before its measured N (phases/warm-up.ts); 0 leaves them
 * out. Default N.
 */
export const WARMUP = Number(process.env.BENCH_WARMUP ?? N)
/**
 * BENCH_PERF=<part>[,<part>...]: a `perf record` of each process whose name starts with one of them
 * (`runner`, `adapter`, `worker`, `bare`; `perf-record.ts`).
 */
export const PERF = (process.env.BENCH_PERF ?? '')
  .split(',')
  .map((part) => part.trim())
  .filter(Boolean)
const PERF_PARTS = ['runner', 'adapter', 'worker', 'bare', 'feed']
const KNOWN_PHASES = ['all', 'burst', 'blocktime', 'push', 'webhook', 'cron', 'flux']
/**
 * BENCH_PHASES: which phases run, a list of `burst` (baseline, bare fulfiller, runner bursts, paced,
 * pairs), `blocktime` (the block-time chain and its RPC bill), and the push phases `webhook`, `cron`
 * and `flux` (`push`: the three). By default all but flux, whose hundred aggregators take a minute or
 * two to deploy; `all` runs every phase.
 */
export const PHASES = (process.env.BENCH_PHASES ?? 'burst,blocktime,webhook,cron')
  .split(',')
  .map((phase) => phase.trim())
  .filter(Boolean)
export const RUN_BURSTS = PHASES.includes('all') || PHASES.includes('burst')
export const RUN_BLOCK_TIME = PHASES.includes('all') || PHASES.includes('blocktime')
const runsPush = (phase: string) =>
  PHASES.includes('all') || PHASES.includes('push') || PHASES.includes(phase)
export const RUN_WEBHOOK = runsPush('webhook')
export const RUN_CRON = runsPush('cron')
export const RUN_FLUX = runsPush('flux')
/** BENCH_PUSH_SECONDS: each measured stretch of the push phases (default 10). */
export const PUSH_SECONDS = Number(process.env.BENCH_PUSH_SECONDS ?? 10)
/** BENCH_WEBHOOK_RATE: webhook calls a second, and empty-route calls before them (default 200). */
export const WEBHOOK_RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 200)
/** BENCH_CRON_JOBS: the cron jobs loaded (default 100), ticking every BENCH_CRON_EVERY_SECONDS (5). */
export const CRON_JOBS = Number(process.env.BENCH_CRON_JOBS ?? 100)
export const CRON_EVERY_SECONDS = Number(process.env.BENCH_CRON_EVERY_SECONDS ?? 5)
/**
 * BENCH_FLUX_JOBS: the flux jobs of the second stretch (default 100; the first has one), each on an
 * aggregator of its own, polled every BENCH_FLUX_POLL_SECONDS (10), on a chain mining a block every
 * BENCH_BLOCK_TIME seconds; each stretch BENCH_FLUX_SECONDS long (default 2 polls).
 */
export const FLUX_JOBS = Number(process.env.BENCH_FLUX_JOBS ?? 100)
export const FLUX_POLL_SECONDS = Number(process.env.BENCH_FLUX_POLL_SECONDS ?? 10)
export const FLUX_SECONDS = Number(process.env.BENCH_FLUX_SECONDS ?? 2 * FLUX_POLL_SECONDS)
/** How long the push phases may take together, start to end. */
const PUSH_PHASES_MS =
  (RUN_WEBHOOK ? 3 * PUSH_SECONDS + 240 : 0) * 1000 +
  (RUN_CRON ? 3 * PUSH_SECONDS + 240 : 0) * 1000 +
  (RUN_FLUX ? 2 * FLUX_SECONDS + 600 : 0) * 1000
/** BENCH_BLOCK_TIME: seconds between the block-time chain's blocks (default 2). */
export const BLOCK_TIME = Number(process.env.BENCH_BLOCK_TIME ?? 2)
/** BENCH_BLOCKTIME_REQUESTS requests, spread evenly over BENCH_BLOCKTIME_SPREAD_SECONDS. */
export const BLOCK_TIME_REQUESTS = Number(process.env.BENCH_BLOCKTIME_REQUESTS ?? 30)
export const BLOCK_TIME_SPREAD_SECONDS = Number(process.env.BENCH_BLOCKTIME_SPREAD_SECONDS ?? 60)
/** BENCH_BLOCKTIME_TRAFFIC: others' transactions (each with a log) a block; 0 leaves them empty. */
export const BLOCK_TIME_TRAFFIC = Number(process.env.BENCH_BLOCKTIME_TRAFFIC ?? 1)
/** BENCH_IDLE_SECONDS: the idle stretch (no requests) whose RPC calls are the per-block rate. */
export const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30)
/**
 * Blocks counted after the last fulfilment: the sender watches a mined fulfilment until it is
 * CHAIN_FINALITY_DEPTH deep (50 by default), and what it reads meanwhile is the request's too.
 */
export const BLOCK_TIME_TAIL_BLOCKS = Number(process.env.BENCH_BLOCKTIME_TAIL_BLOCKS ?? 50)
/** BENCH_BLOCKTIME_RPC: the transports the block-time phase runs the runner over, one phase each. */
export const BLOCK_TIME_TRANSPORTS = (process.env.BENCH_BLOCKTIME_RPC ?? 'ws,http')
  .split(',')
  .map((transport) => transport.trim())
  .filter((transport): transport is 'ws' | 'http' => transport === 'ws' || transport === 'http')
/** How long one block-time phase may take, start to end (ten blocks of it before the idle stretch). */
export const BLOCK_TIME_PHASE_MS =
  (IDLE_SECONDS + BLOCK_TIME_SPREAD_SECONDS + (BLOCK_TIME_TAIL_BLOCKS + 25) * BLOCK_TIME) * 1000 +
  60_000
export const PHASE_TIMEOUT_MS = Math.max(60_000, N * 200)
const PHASE_COUNT = RUN_BURSTS
  ? 1 +
    (BARE ? 1 : 0) +
    KEY_COUNTS.length +
    (PACED_COUNT > 0 ? 1 : 0) +
    2 * Math.max(0, PAIRS) +
    // A warm phase runs its warm-up burst and its measured one.
    (WARMUP > 0 ? 4 : 0)
  : 0
/** With --against: a bare phase and two runner phases per plan in each pair (a warm one counts twice). */
const AGAINST_PHASE_COUNT =
  AGAINST_PAIRS *
  (1 + 2 * (KEY_COUNTS.length + (PACED_COUNT > 0 ? 1 : 0)) * (AGAINST_WARMUP > 0 ? 2 : 1))
export const BENCH_TIMEOUT_MS =
  (AGAINST === undefined ? PHASE_COUNT : AGAINST_PHASE_COUNT) * (PHASE_TIMEOUT_MS + 30_000) +
  // Building the reference: its install or link, tsc and its contracts.
  (AGAINST === undefined ? 0 : 600_000) +
  (RUN_BLOCK_TIME ? BLOCK_TIME_TRANSPORTS.length * BLOCK_TIME_PHASE_MS : 0) +
  (AGAINST === undefined ? PUSH_PHASES_MS : 0) +
  120_000
export const JOB_NAME = 'datafeed game-odds (uint256)'
/** Equal parameters: after the first fetch the adapter answers from its cache, so the runner is measured. */
export const GAME_ODDS_PARAMS: Array<[string, string]> = [
  ['region', 'england'],
  ['sport', 'soccer'],
  ['league', 'epl'],
  ['date', '2024-08-16'],
  ['homeTeam', 'Man United'],
  ['path', '$.data.homeMoneyLine'],
  ['times', '100'],
]
export const EXPECTED_VALUE = 160n
export const RUNNER_KEYS = ANVIL_PRIVATE_KEYS.slice(1, 5)
export const BASELINE_KEY = ANVIL_PRIVATE_KEYS[5] as string
/** The bare fulfiller's key: the one-key runner's (each phase has a fresh chain, so like for like). */
export const BARE_KEY = RUNNER_KEYS[0] as string

const benchStart = Date.now()
/** Progress on stderr, with seconds since the start. */
export function step(what: string): void {
  console.error(`[${((Date.now() - benchStart) / 1000).toFixed(1)} s] ${what}`)
}

/** Throws, naming the setting, when one is out of range. */
export function checkSettings(): void {
  if (!Number.isInteger(N) || N < 1)
    throw new Error(
      `N must be a positive integer (got ${ARGS.rest[0] ?? process.env.BENCH_REQUESTS})`,
    )
  if (AGAINST !== undefined && !/^[\w./^~@{}-]+$/.test(AGAINST))
    throw new Error(
      `--against takes a git ref: a commit, tag or branch (got "${AGAINST}"), e.g. npm run bench -- --against 7bab33e 500`,
    )
  if (!Number.isInteger(AGAINST_PAIRS) || AGAINST_PAIRS < 1 || AGAINST_PAIRS > 10)
    throw new Error(
      `BENCH_AGAINST_PAIRS must be a whole number from 1 to 10 (got ${process.env.BENCH_AGAINST_PAIRS})`,
    )
  if (!Number.isInteger(AGAINST_WARMUP) || AGAINST_WARMUP < 0)
    throw new Error(
      `BENCH_AGAINST_WARMUP must be a whole number of requests, 0 or more (got ${process.env.BENCH_AGAINST_WARMUP})`,
    )
  if (
    !KEY_COUNTS.every((keys) => Number.isInteger(keys) && keys >= 1 && keys <= RUNNER_KEYS.length)
  )
    throw new Error(
      `BENCH_KEYS must list key counts from 1 to ${RUNNER_KEYS.length} (got ${process.env.BENCH_KEYS})`,
    )
  if (!(PACED_COUNT >= 0) || !(PACED_RATE > 0))
    throw new Error('BENCH_RATE must be above 0 and BENCH_PACED_SECONDS at least 0')
  if (!Number.isInteger(BASELINE_WINDOW) || BASELINE_WINDOW < 1)
    throw new Error('BENCH_BASELINE_WINDOW must be a positive integer')
  if (RUNNER_RPC !== 'ws' && RUNNER_RPC !== 'http')
    throw new Error('BENCH_RUNNER_RPC must be ws or http')
  if (!Number.isInteger(PAIRS) || PAIRS < 0 || PAIRS > 10)
    throw new Error(
      `BENCH_PAIRS must be a whole number from 0 to 10 (got ${process.env.BENCH_PAIRS})`,
    )
  if (!PERF.every((part) => PERF_PARTS.some((known) => known.startsWith(part))))
    throw new Error(
      `BENCH_PERF lists parts to record, from ${PERF_PARTS.join(', ')} (got ${process.env.BENCH_PERF})`,
    )
  if (!PHASES.every((phase) => KNOWN_PHASES.includes(phase)))
    throw new Error(
      `BENCH_PHASES lists ${KNOWN_PHASES.join(', ')} (got ${process.env.BENCH_PHASES})`,
    )
  const counts = [PUSH_SECONDS, WEBHOOK_RATE, CRON_JOBS, CRON_EVERY_SECONDS, FLUX_JOBS]
  if (![...counts, FLUX_POLL_SECONDS, FLUX_SECONDS].every((v) => Number.isInteger(v) && v >= 1))
    throw new Error(
      'BENCH_PUSH_SECONDS, BENCH_WEBHOOK_RATE, BENCH_CRON_JOBS, BENCH_CRON_EVERY_SECONDS, BENCH_FLUX_JOBS, BENCH_FLUX_POLL_SECONDS and BENCH_FLUX_SECONDS must be whole numbers, 1 or more',
    )
  if (!(BLOCK_TIME >= 1) || !Number.isInteger(BLOCK_TIME))
    throw new Error(`BENCH_BLOCK_TIME must be whole seconds, 1 or more (got ${BLOCK_TIME})`)
  if (
    ![BLOCK_TIME_REQUESTS, BLOCK_TIME_SPREAD_SECONDS, IDLE_SECONDS].every(
      (value) => Number.isInteger(value) && value >= 1,
    ) ||
    ![BLOCK_TIME_TAIL_BLOCKS, BLOCK_TIME_TRAFFIC].every(
      (value) => Number.isInteger(value) && value >= 0,
    )
  )
    throw new Error(
      'BENCH_BLOCKTIME_REQUESTS, BENCH_BLOCKTIME_SPREAD_SECONDS and BENCH_IDLE_SECONDS must be positive integers, BENCH_BLOCKTIME_TAIL_BLOCKS and BENCH_BLOCKTIME_TRAFFIC at least 0',
    )
  if (RUN_BLOCK_TIME && BLOCK_TIME_TRANSPORTS.length === 0)
    throw new Error(
      `BENCH_BLOCKTIME_RPC lists ws and/or http (got ${process.env.BENCH_BLOCKTIME_RPC})`,
    )
  if (!Number.isInteger(WARMUP) || WARMUP < 0)
    throw new Error(`BENCH_WARMUP must be a whole number of requests, 0 or more (got ${WARMUP})`)
  // --against runs neither (its own pairs are BENCH_AGAINST_PAIRS, its warm-up BENCH_AGAINST_WARMUP).
  if (AGAINST === undefined && (PAIRS > 0 || WARMUP > 0) && (!BARE || !KEY_COUNTS.includes(1)))
    throw new Error(
      'BENCH_PAIRS and BENCH_WARMUP need the bare phase (BENCH_BARE) and a one-key phase (BENCH_KEYS); BENCH_WARMUP=0 leaves the warm phases out',
    )
}
