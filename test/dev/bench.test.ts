import { execFile } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

// docs/performance.md shows `npm run bench`; this runs it as written, small: 20 requests, the one-key
// burst only, and one more alternating pair of the bare fulfiller and the one-key burst (BENCH_PAIRS).
// Its figures are not judged here (speed is measured, never asserted): only that every phase, the
// bare fulfiller's and the pair's included, fulfils every request exactly once, read from the chain by
// the bench, that the results JSON keeps the keys the docs name, that BENCH_RPC_CALLS counts the
// calls anvil served (each request and each fulfilment is an eth_sendRawTransaction), that anvil's
// CPU is shown by the blocks it mined, and that the block-time phase (short here: 4 requests over 4 s
// on 2 s blocks, with another key's transaction in each block) fulfils its requests and writes its
// blockTime, rpc and redis keys for both transports. With BENCH_PHASES=all the push phases run too,
// small: every webhook call answered with a run's id and every run fulfilled (the empty route's
// calls all 404), cron ticks counted with their Redis bill, and the flux phase's one job and three,
// each aggregator's first round submitted (its gas read from the receipts).

const projectRoot = join(import.meta.dirname, '../..')
const REQUESTS = 20

interface PhaseResult {
  requests: number
  fulfilled: number
  exactlyOnce: boolean
  rpcCallsPerRequest?: Record<string, number>
}

interface BenchResults {
  requests: number
  runner: PhaseResult[]
  barePhase: PhaseResult
  bare: { fulfilmentsPerSecond: number; cpuMsPerFulfilment: number }
  targets: { target: string; met: boolean }[]
  pairs: { pair: number; rateRatio: number; cpuRatio: number; exactlyOnce: boolean }[]
  blockTime: Record<
    string,
    {
      seconds: number
      requests: number
      fulfilled: number
      nextBlockShare: number
      blocksToFulfil: { p50: number; p99: number; max: number }
    }
  >
  rpc: Record<
    string,
    {
      idleCallsPerBlock: number
      callsPerRequest: number
      callsPerRequestBeyondIdle: number
      sharedReadsPerBlock: number
      trafficTransactions: number
      byMethod: { idlePerBlock: Record<string, number>; perRequest: Record<string, number> }
    }
  >
  redis: Record<string, { idleCommandsPerBlock: number; commandsPerRequest: number }>
  push: {
    webhook: {
      emptyRoute: { calls: number; statuses: Record<string, number> }
      webhook: {
        calls: number
        statuses: Record<string, number>
        runs: number
        runsFulfilled: number
      }
      p99Ratio: number
    }
    cron: { ticks: number; perTick: { redisCommands: number } }
    flux: {
      one: FluxStretch
      all: FluxStretch
      gasPerSubmission: { p50: number; submissions: number }
    }
  }
}

interface FluxStretch {
  jobs: number
  blocks: number
  pollsPerJob: number
  rpc: { blockReadsPerBlock: number }
}

const BLOCK_TIME_REQUESTS = 4
const FLUX_JOBS = 3

/** The push phases' figures are counts the runner's behaviour makes, not speeds. */
function expectPushPhases(push: BenchResults['push']): void {
  const { webhook, cron, flux } = push
  const calls = 20 * 2
  expect(webhook.emptyRoute.statuses).toEqual({ '404': calls })
  expect(webhook.webhook.statuses).toEqual({ '200': calls })
  expect(webhook.webhook.runs).toBe(calls)
  expect(webhook.webhook.runsFulfilled).toBe(calls)
  expect(webhook.p99Ratio).toBeGreaterThan(0)
  expect(cron.ticks).toBeGreaterThan(0)
  expect(cron.perTick.redisCommands).toBeGreaterThan(0)
  expect([flux.one.jobs, flux.all.jobs]).toEqual([1, FLUX_JOBS])
  for (const stretch of [flux.one, flux.all]) {
    expect(stretch.blocks).toBeGreaterThan(0)
    expect(stretch.pollsPerJob).toBeGreaterThan(0)
  }
  // Each aggregator's first round, submitted by the runner's key.
  expect(flux.gasPerSubmission.submissions).toBeGreaterThanOrEqual(FLUX_JOBS)
  expect(flux.gasPerSubmission.p50).toBeGreaterThan(21_000)
}

describe('npm run bench', () => {
  it('fulfils every request exactly once in every phase, and writes the results JSON', async () => {
    const { stdout } = await promisify(execFile)('npm', ['run', 'bench', '--', String(REQUESTS)], {
      cwd: projectRoot,
      env: {
        ...process.env,
        BENCH_KEYS: '1',
        BENCH_PACED_SECONDS: '0',
        BENCH_PAIRS: '1',
        BENCH_RPC_CALLS: '1',
        BENCH_BLOCKTIME_REQUESTS: String(BLOCK_TIME_REQUESTS),
        BENCH_BLOCKTIME_SPREAD_SECONDS: '4',
        BENCH_IDLE_SECONDS: '4',
        BENCH_BLOCKTIME_TAIL_BLOCKS: '2',
        BENCH_PHASES: 'all',
        BENCH_PUSH_SECONDS: '2',
        BENCH_WEBHOOK_RATE: '20',
        BENCH_CRON_JOBS: '5',
        BENCH_CRON_EVERY_SECONDS: '1',
        BENCH_FLUX_JOBS: String(FLUX_JOBS),
        BENCH_FLUX_POLL_SECONDS: '2',
        BENCH_FLUX_SECONDS: '4',
      },
      // A hang bound only: the run takes seconds; the bench's own watchdog stops what it started.
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    })
    const file = /written to (\S+\.json)/.exec(stdout)?.[1]
    expect(file, stdout.slice(-2_000)).toBeDefined()
    const results = JSON.parse(readFileSync(file!, 'utf8')) as BenchResults
    rmSync(file!)

    expect(results.requests).toBe(REQUESTS)
    for (const phase of [results.barePhase, ...results.runner]) {
      expect(phase.fulfilled).toBe(REQUESTS)
      expect(phase.exactlyOnce).toBe(true)
      expect(phase.rpcCallsPerRequest?.eth_sendRawTransaction).toBeGreaterThanOrEqual(2)
    }
    expect(stdout).toContain('JSON-RPC calls per request by method')
    // anvil's CPU by its blocks: a row for the bare fulfiller and one for the burst, each with its
    // block count and the ms per block and per request derived from anvil's CPU time.
    const anvilTable = stdout.split("anvil's CPU by the blocks it mined")[1]?.split('\n\n')[0] ?? ''
    for (const label of ['bare fulfiller', 'runner, 1 key'])
      expect(anvilTable).toMatch(new RegExp(`^${label} +\\d+ +\\d+ +[\\d.]+ +[\\d.]+ *$`, 'm'))
    expect(results.bare.fulfilmentsPerSecond).toBeGreaterThan(0)
    expect(results.bare.cpuMsPerFulfilment).toBeGreaterThan(0)
    expect(results.targets.find((target) => target.target.startsWith('exactly once'))?.met).toBe(
      true,
    )
    // Pair 0 is the phases' own bare fulfiller and one-key burst, pair 1 the one run after them.
    expect(results.pairs.map((pair) => pair.pair)).toEqual([0, 1])
    for (const pair of results.pairs) {
      expect(pair.exactlyOnce).toBe(true)
      expect(pair.rateRatio).toBeGreaterThan(0)
      expect(pair.cpuRatio).toBeGreaterThan(0)
    }
    for (const transport of ['ws', 'http']) {
      const blockTime = results.blockTime[transport]
      expect(blockTime?.seconds).toBe(2)
      expect(blockTime?.fulfilled).toBe(BLOCK_TIME_REQUESTS)
      expect(blockTime?.blocksToFulfil.max).toBeGreaterThanOrEqual(1)
      const rpc = results.rpc[transport]
      // Each fulfilment is one eth_sendRawTransaction of the runner's (the requests go to anvil itself).
      expect(rpc?.byMethod.perRequest.eth_sendRawTransaction).toBe(1)
      // Idle can be no call at all over ws (the heads are notifications, and no block may hold the
      // Operator's logs); over http the head is read.
      expect(rpc?.idleCallsPerBlock).toBeGreaterThanOrEqual(transport === 'http' ? 1 : 0)
      expect(rpc?.callsPerRequest).toBeGreaterThanOrEqual(2)
      expect(rpc?.callsPerRequestBeyondIdle).toBeGreaterThanOrEqual(rpc?.callsPerRequest ?? 0)
      expect(rpc?.sharedReadsPerBlock).toBeGreaterThan(0)
      // Others' transactions went into the blocks meanwhile (bench/runner/phases/chain-traffic.ts).
      expect(rpc?.trafficTransactions).toBeGreaterThan(0)
      // A request's run record alone is four writes of three commands each.
      expect(results.redis[transport]?.commandsPerRequest).toBeGreaterThan(12)
      expect(results.redis[transport]?.idleCommandsPerBlock).toBeGreaterThanOrEqual(0)
    }
    expect(stdout).toContain('block-time chain (anvil --block-time 2)')
    expectPushPhases(results.push)
  }, 900_000)
})
