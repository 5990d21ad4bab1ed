/**
 * Runner benchmark (`npm run bench`, N from `BENCH_REQUESTS` or the first argument, default 1,000).
 * In one run on a dev chain (anvil, automine), each feedrunner part in its own process
 * (`bin/feedrunner.js adapter`, `worker`, `runner`) so memory is measured per process:
 *
 * 1. baseline: N real requests are made first, then N pre-signed `fulfillOracleRequest2` transactions
 *    for them are sent straight to anvil from one authorised key, 16 in flight: the chain's own limit;
 * 2. the runner with one sender key: N requests sent as fast as the consumer can; fulfilments per
 *    second, and latency from the request's block to the fulfilment's block (p50/p95/p99);
 * 3. the same with four sender keys (a new runner process);
 * and the peak RSS (VmHWM) of every process. Prints a table and writes bench/results/<timestamp>.json.
 *
 * Block times: anvil's block timestamps have one-second resolution, so a watcher polls the head every
 * few milliseconds and stamps each block with the time it was first seen; a latency is the difference
 * of two such stamps (the request's block, the fulfilment's block), both seen the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { cpus, loadavg, tmpdir } from 'node:os'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AbiCoder, Wallet, type Log } from 'ethers'
import { Redis } from 'ioredis'
import { allFamilyUrls } from '../src/config/settings.ts'
import { decodeOperatorLog, encodeFulfillOracleRequest2, ORACLE_REQUEST_TOPIC, type OracleRequestEvent } from '../src/chain/operator.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil } from '../src/dev/anvil.ts'
import { deployDevContracts, type DevContracts } from '../src/dev/deploy.ts'
import { freePort } from '../src/dev/ports.ts'
import { waitFor } from '../src/dev/process.ts'
import { redisAnswers, startPrivateRedis } from '../src/dev/redis.ts'
import { sendConsumerRequests, waitForFulfilments, type ConsumerRequest } from '../src/dev/requests.ts'
import { createFeedServer } from '../src/feeds/server/index.ts'
import { loadJobRegistry } from '../src/runner/job-registry.ts'
import { RunStore, type RunRecord } from '../src/runner/run-record.ts'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const N = Number(process.argv[2] ?? process.env.BENCH_REQUESTS ?? 1_000)
const KEY_COUNTS = (process.env.BENCH_KEYS ?? '1,4').split(',').map(Number)
const BASELINE_IN_FLIGHT = 16
const POOL_CHECK_MS = 100
const FLUSH_AFTER_MS = 300
const WATCH_INTERVAL_MS = 10
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info'
const PHASE_TIMEOUT_MS = Math.max(60_000, N * 200)
const BENCH_TIMEOUT_MS = 3 * PHASE_TIMEOUT_MS + 120_000
const JOB_NAME = 'datafeed game-odds (uint256)'
/** Equal parameters: after the first fetch the adapter answers from its cache, so the runner is measured. */
const GAME_ODDS_PARAMS: Array<[string, string]> = [
  ['region', 'england'], ['sport', 'soccer'], ['league', 'epl'], ['date', '2024-08-16'], ['homeTeam', 'Man United'],
  ['path', '$.data.homeMoneyLine'], ['times', '100'],
]
const EXPECTED_VALUE = 160n
const RUNNER_KEYS = ANVIL_PRIVATE_KEYS.slice(1, 5)
const BASELINE_KEY = ANVIL_PRIVATE_KEYS[5]

const benchStart = Date.now()
/** Progress on stderr, with seconds since the start. */
function step(what: string): void {
  console.error(`[${((Date.now() - benchStart) / 1000).toFixed(1)} s] ${what}`)
}

if (!Number.isInteger(N) || N < 1) throw new Error(`N must be a positive integer (got ${process.argv[2] ?? process.env.BENCH_REQUESTS})`)

// ---------------------------------------------------------------- small helpers

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number
}

function summary(values: readonly number[]): { p50: number; p95: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN }
}

function round(value: number, digits = 1): number {
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  const body = (await response.json()) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result as T
}

/** Peak resident set (VmHWM) and current RSS of a process, in MB. */
function memoryOf(pid: number): { peakMb: number; rssMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
    return { peakMb: round(kb('VmHWM') / 1024), rssMb: round(kb('VmRSS') / 1024) }
  } catch {
    return undefined
  }
}

/** CPU time (user + system) a process has used so far, in ms. */
function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    // utime and stime are fields 14 and 15 of stat; after "pid (comm) " they are at 11 and 12.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return Number.NaN
  }
}
const CLOCK_TICKS = 100

/** Commands the Redis server has run so far (INFO commandstats). */
async function redisCommandCount(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats')
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0)
}

// ---------------------------------------------------------------- the block watcher

/** Stamps every block with the time the watcher first saw it (ms since the epoch). */
class BlockWatcher {
  readonly seenAt = new Map<number, number>()
  private last = -1
  private running = false
  private loop: Promise<void> | undefined

  constructor(private readonly rpcUrl: string) {}

  async start(): Promise<void> {
    this.last = Number(await rpc<string>(this.rpcUrl, 'eth_blockNumber'))
    this.running = true
    this.loop = this.run()
  }

  /** evm_mine calls made for transactions anvil's automine left in its pool. */
  flushes = 0
  private pendingSince: number | undefined
  private lastPoolCheck = 0

  private async run(): Promise<void> {
    while (this.running) {
      const head = Number(await rpc<string>(this.rpcUrl, 'eth_blockNumber').catch(() => this.last))
      const now = Date.now()
      if (now - this.lastPoolCheck >= POOL_CHECK_MS) {
        this.lastPoolCheck = now
        await this.flushStuckPool(now).catch(() => undefined)
      }
      for (let block = this.last + 1; block <= head; block++) this.seenAt.set(block, now)
      this.last = Math.max(this.last, head)
      await new Promise((resolveDelay) => setTimeout(resolveDelay, WATCH_INTERVAL_MS))
    }
  }

  /**
   * anvil's automine sometimes leaves ready transactions in its pool and goes on mining blocks without
   * them (foundry-rs/foundry#10122); a sender then sees its nonce stall and bumps, and the chain fills
   * with empty blocks. Transactions pending longer than FLUSH_AFTER_MS are mined with evm_mine, and
   * each flush is counted in the results.
   */
  private async flushStuckPool(now: number): Promise<void> {
    const status = await rpc<{ pending: string }>(this.rpcUrl, 'txpool_status')
    if (Number(status.pending) === 0) {
      this.pendingSince = undefined
      return
    }
    this.pendingSince ??= now
    if (now - this.pendingSince < FLUSH_AFTER_MS) return
    await rpc(this.rpcUrl, 'evm_mine')
    this.flushes += 1
    this.pendingSince = undefined
  }

  /** Waits until the watcher has stamped `block`. */
  async seen(block: number): Promise<number> {
    await waitFor(`block ${block} to be seen`, async () => this.seenAt.has(block), 30_000, 5)
    return this.seenAt.get(block) as number
  }

  async stop(): Promise<void> {
    this.running = false
    await this.loop
  }
}

// ---------------------------------------------------------------- feedrunner processes

interface Part {
  name: string
  child: ChildProcess
  output(): string
  stop(): Promise<void>
}

const children = new Set<ChildProcess>()
// An interrupted bench must not leave feedrunner processes behind (anvil is handled by src/dev).
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
})

/** Starts `bin/feedrunner.js <command>` and waits for `ready` on its stdout. */
async function startPart(name: string, command: string, env: Record<string, string>, ready: RegExp): Promise<Part> {
  const profile = process.env.BENCH_PROFILE && name.startsWith(process.env.BENCH_PROFILE) ? ['--cpu-prof', `--cpu-prof-dir=${join(tmpdir(), 'feedrunner-bench-profiles')}`] : []
  const child = spawn(process.execPath, [...profile, join(root, 'bin/feedrunner.js'), command], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let recent = ''
  let isReady = false
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    if (!isReady && ready.test(recent.slice(-500) + text)) isReady = true
    recent = (recent + text).slice(-20_000)
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()))
  children.add(child)
  const part: Part = {
    name,
    child,
    output: () => recent,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
  try {
    await waitFor(`${name} to start`, async () => {
      if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${recent.slice(-2_000)}`)
      return isReady
    }, 60_000, 50)
  } catch (error) {
    await part.stop()
    throw new Error(`${name}: ${error instanceof Error ? error.message : String(error)}\n${recent.slice(-2_000)}`)
  }
  return part
}

// ---------------------------------------------------------------- phases

interface Context {
  rpcUrl: string
  chainId: number
  dev: DevContracts
  watcher: BlockWatcher
  redis: Redis
  baseEnv: Record<string, string>
  externalJobId: string
  prefix: string
  /** Processes whose CPU time is accounted per phase, besides the runner. */
  pids: Record<string, number>
}

interface BaselineResult {
  transactions: number
  inFlight: number
  seconds: number
  perSecond: number
  allMined: boolean
}

/** N pre-signed fulfilments of real requests, straight to the chain from one key. */
async function runBaseline(ctx: Context): Promise<BaselineResult> {
  const request: ConsumerRequest = { externalJobId: ctx.externalJobId, valueType: 'uint256', params: GAME_ODDS_PARAMS, payment: 0n }
  const fromBlock = Number(await rpc<string>(ctx.rpcUrl, 'eth_blockNumber')) + 1
  step(`baseline: making ${N} requests`)
  const sent = await sendConsumerRequests(ctx.dev.consumer, ctx.dev.deployer, Array.from({ length: N }, () => request))
  step('baseline: requests mined, signing the fulfilments')
  const toBlock = Math.max(...sent.map((item) => item.blockNumber))
  const events = (await ctx.dev.provider.getLogs({ address: ctx.dev.addresses.operator, topics: [ORACLE_REQUEST_TOPIC], fromBlock, toBlock }))
    .map((log: Log) => decodeOperatorLog(log, ctx.chainId))
    .filter((event): event is OracleRequestEvent => event?.kind === 'request')
  if (events.length !== N) throw new Error(`baseline: expected ${N} OracleRequest logs, found ${events.length}`)

  const wallet = new Wallet(BASELINE_KEY)
  const nonce = Number(await rpc<string>(ctx.rpcUrl, 'eth_getTransactionCount', [wallet.address, 'pending']))
  const block = await rpc<{ baseFeePerGas: string }>(ctx.rpcUrl, 'eth_getBlockByNumber', ['latest', false])
  const maxFeePerGas = BigInt(block.baseFeePerGas) * 3n + 10n ** 9n
  const raws = await Promise.all(
    events.map((event, index) =>
      wallet.signTransaction({
        type: 2, chainId: ctx.chainId, nonce: nonce + index, to: ctx.dev.addresses.operator, gasLimit: 500_000, maxFeePerGas, maxPriorityFeePerGas: 10n ** 9n,
        data: encodeFulfillOracleRequest2(event, AbiCoder.defaultAbiCoder().encode(['bytes32', 'uint256'], [event.requestId, EXPECTED_VALUE])),
      }),
    ),
  )
  step('baseline: sending')
  const started = performance.now()
  let next = 0
  const sender = async () => {
    while (next < raws.length) {
      const raw = raws[next++] as string
      await rpc<string>(ctx.rpcUrl, 'eth_sendRawTransaction', [raw])
    }
  }
  await Promise.all(Array.from({ length: BASELINE_IN_FLIGHT }, sender))
  await waitFor('the baseline transactions to be mined', async () => Number(await rpc<string>(ctx.rpcUrl, 'eth_getTransactionCount', [wallet.address, 'latest'])) >= nonce + N, 60_000, 2)
  const seconds = (performance.now() - started) / 1000
  const fulfilled = await waitForFulfilments(ctx.dev.consumer, ctx.dev.provider, events.map((event) => event.requestId), { fromBlock: toBlock, timeoutMs: 10_000 })
  return { transactions: N, inFlight: BASELINE_IN_FLIGHT, seconds: round(seconds, 2), perSecond: round(N / seconds), allMined: fulfilled.size === N }
}

interface RunnerPhaseResult {
  keys: number
  requests: number
  fulfilled: number
  /** Each request answered by exactly one OracleResponse, none reverted. */
  exactlyOnce: boolean
  requestsPerSecond: number
  /** N / (last fulfilment block seen - first request block seen). */
  fulfilmentsPerSecond: number
  /** Fulfilments per second between the first and the last fulfilment. */
  drainPerSecond: number
  seconds: number
  latencyMs: { p50: number; p95: number; p99: number; max: number }
  /** Requests mined but not fulfilled yet, at most. */
  maxInFlight: number
  /** Where the time went, from the run records (p50 / p95, ms). */
  stagesMs: Record<string, { p50: number; p95: number }>
  runnerPeakRssMb: number
  /** The runner's RSS once started, before any request. */
  runnerIdleRssMb: number
  /** CPU time each process used during the phase, per request (ms). */
  cpuMsPerRequest: Record<string, number>
  /** Redis commands (all processes, Lua scripts count once) per request. */
  redisCommandsPerRequest: number
  /** Times anvil left transactions in its pool and the bench mined them (see flushStuckPool). */
  anvilFlushes: number
}

async function runRunnerPhase(ctx: Context, keys: number): Promise<{ result: RunnerPhaseResult; runnerPid: number }> {
  const prefix = `${ctx.prefix}-k${keys}`
  const nodeKeys = RUNNER_KEYS.slice(0, keys)
  const head = Number(await rpc<string>(ctx.rpcUrl, 'eth_blockNumber'))
  const runner = await startPart(`runner (${keys} key${keys > 1 ? 's' : ''})`, 'runner', {
    ...ctx.baseEnv,
    QUEUE_PREFIX: prefix,
    NODE_PRIVATE_KEY: nodeKeys[0] as string,
    ...(keys > 1 ? { NODE_PRIVATE_KEYS: nodeKeys.join(',') } : {}),
    RUNNER_FROM_BLOCK: String(head + 1),
    OPERATIONS_PORT: String(await freePort()),
  }, /runner started/)
  runner.child.once('exit', (code) => {
    if (!stopping) console.error(`the runner exited during the phase (code ${code}):\n${runner.output().slice(-3_000)}`)
  })
  let stopping = false
  const addresses = nodeKeys.map((key) => new Wallet(key).address)
  const noncesBefore = await Promise.all(addresses.map(async (address) => Number(await rpc<string>(ctx.rpcUrl, 'eth_getTransactionCount', [address, 'latest']))))
  const pids: Record<string, number> = { runner: runner.child.pid!, ...ctx.pids }
  const runnerIdleRssMb = memoryOf(runner.child.pid!)?.rssMb ?? Number.NaN
  const commandsBefore = await redisCommandCount(ctx.redis)
  const flushesBefore = ctx.watcher.flushes
  const cpuBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMsOf(pid)]))
  let peak = 0
  const sampler = setInterval(() => {
    peak = Math.max(peak, memoryOf(runner.child.pid!)?.peakMb ?? 0)
  }, 250)
  try {
    const request: ConsumerRequest = { externalJobId: ctx.externalJobId, valueType: 'uint256', params: GAME_ODDS_PARAMS, payment: 0n }
    const fromBlock = Number(await rpc<string>(ctx.rpcUrl, 'eth_blockNumber')) + 1
    step(`runner (${keys} keys): sending ${N} requests`)
    const sent = await sendConsumerRequests(ctx.dev.consumer, ctx.dev.deployer, Array.from({ length: N }, () => request))
    step(`runner (${keys} keys): requests mined, waiting for fulfilments`)
    const fulfilled = await waitForFulfilments(ctx.dev.consumer, ctx.dev.provider, sent.map((item) => item.requestId), { fromBlock, timeoutMs: PHASE_TIMEOUT_MS })
    peak = Math.max(peak, memoryOf(runner.child.pid!)?.peakMb ?? 0)
    const redisCommandsPerRequest = round(((await redisCommandCount(ctx.redis)) - commandsBefore) / N, 1)
    const cpuMsPerRequest = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, round((cpuMsOf(pid) - (cpuBefore[name] as number)) / N, 2)]))

    const requestBlocks = sent.map((item) => item.blockNumber)
    const fulfilBlocks = [...fulfilled.values()].map((item) => item.blockNumber)
    const seen = async (block: number) => ctx.watcher.seen(block)
    const firstRequest = await seen(Math.min(...requestBlocks))
    const lastRequest = await seen(Math.max(...requestBlocks))
    const latencies: number[] = []
    const timeline: Array<[number, 1 | -1]> = []
    for (const item of sent) {
      const requestSeen = await seen(item.blockNumber)
      timeline.push([requestSeen, 1])
      const fulfilment = fulfilled.get(item.requestId)
      if (!fulfilment) continue
      const fulfilSeen = await seen(fulfilment.blockNumber)
      latencies.push(fulfilSeen - requestSeen)
      timeline.push([fulfilSeen, -1])
    }
    timeline.sort((a, b) => a[0] - b[0] || b[1] - a[1])
    let inFlight = 0
    let maxInFlight = 0
    for (const [, change] of timeline) maxInFlight = Math.max(maxInFlight, (inFlight += change))
    const firstFulfil = fulfilBlocks.length > 0 ? await seen(Math.min(...fulfilBlocks)) : Number.NaN
    const lastFulfil = fulfilBlocks.length > 0 ? await seen(Math.max(...fulfilBlocks)) : Number.NaN
    const seconds = (lastFulfil - firstRequest) / 1000

    // Exactly once: one OracleResponse per request, and every runner nonce spent on one of them.
    const responses = await ctx.dev.provider.getLogs({ address: ctx.dev.addresses.operator, topics: [ctx.dev.operator.interface.getEvent('OracleResponse')!.topicHash], fromBlock })
    const ours = new Set(sent.map((item) => item.requestId))
    const responded = responses.map((log) => (log.topics[1] ?? '').toLowerCase()).filter((id) => ours.has(id))
    const noncesAfter = await Promise.all(addresses.map(async (address) => Number(await rpc<string>(ctx.rpcUrl, 'eth_getTransactionCount', [address, 'latest']))))
    const txCount = noncesAfter.reduce((sum, after, index) => sum + after - (noncesBefore[index] as number), 0)
    const exactlyOnce = fulfilled.size === N && responded.length === N && new Set(responded).size === N && txCount === N

    const runs = new RunStore(ctx.redis, `${prefix}:runner`)
    const records = (await Promise.all(sent.map((item) => runs.get(item.requestId)))).filter((record): record is RunRecord => record !== undefined)
    const stage = (from: (record: RunRecord, index: number) => number | undefined, to: (record: RunRecord) => number | undefined) => {
      const values = records.map((record, index) => {
        const start = from(record, index)
        const end = to(record)
        return start === undefined || end === undefined ? undefined : end - start
      }).filter((value): value is number => value !== undefined)
      const { p50, p95 } = summary(values)
      return { p50: round(p50, 0), p95: round(p95, 0) }
    }
    const blockSeen = new Map(sent.map((item) => [item.requestId, ctx.watcher.seenAt.get(item.blockNumber)]))
    const stagesMs = {
      'block -> received': stage((record) => blockSeen.get(record.requestId), (record) => record.times.received),
      'received -> running': stage((record) => record.times.received, (record) => record.times.running),
      'running -> sent': stage((record) => record.times.running, (record) => record.times.sent),
      'sent -> fulfilled (run record)': stage((record) => record.times.sent, (record) => record.times.fulfilled),
    }
    const result: RunnerPhaseResult = {
      keys,
      requests: N,
      fulfilled: fulfilled.size,
      exactlyOnce,
      requestsPerSecond: round(N / Math.max(0.001, (lastRequest - firstRequest) / 1000)),
      fulfilmentsPerSecond: round(fulfilled.size / seconds),
      drainPerSecond: round(fulfilled.size / Math.max(0.001, (lastFulfil - firstFulfil) / 1000)),
      seconds: round(seconds, 2),
      latencyMs: (({ p50, p95, p99, max }) => ({ p50: round(p50, 0), p95: round(p95, 0), p99: round(p99, 0), max: round(max, 0) }))(summary(latencies)),
      maxInFlight,
      stagesMs,
      runnerPeakRssMb: peak,
      runnerIdleRssMb,
      cpuMsPerRequest,
      redisCommandsPerRequest,
      anvilFlushes: ctx.watcher.flushes - flushesBefore,
    }
    if (fulfilled.size < N) console.error(`runner (${keys} keys): only ${fulfilled.size} of ${N} fulfilled within ${PHASE_TIMEOUT_MS} ms\n${runner.output().slice(-3_000)}`)
    return { result, runnerPid: runner.child.pid! }
  } finally {
    clearInterval(sampler)
    stopping = true
    await runner.stop()
  }
}

// ---------------------------------------------------------------- main

/** Gives every key without ether 100 ETH from the deployer (not every listed dev key is a funded anvil account). */
async function fundKeys(dev: DevContracts, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    const address = new Wallet(key).address
    if ((await dev.provider.getBalance(address)) > 0n) continue
    const receipt = await (await dev.deployer.sendTransaction({ to: address, value: 10n ** 20n })).wait()
    if (receipt?.status !== 1) throw new Error(`funding ${address} failed`)
  }
}

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<void>> = []
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined)
  }
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)))
  process.once('SIGTERM', () => void cleanup().finally(() => process.exit(143)))
  // Bounded: whatever hangs, the bench ends (and stops what it started).
  const watchdog = setTimeout(() => {
    console.error(`bench: gave up after ${BENCH_TIMEOUT_MS} ms`)
    void cleanup().finally(() => process.exit(2))
  }, BENCH_TIMEOUT_MS)
  watchdog.unref()
  try {
    // A private redis-server by default: no other load on it, and its command counts are ours alone.
    let redisUrl = process.env.BENCH_REDIS_URL ?? ''
    if (!redisUrl || !(await redisAnswers(redisUrl))) {
      const privateRedis = await startPrivateRedis()
      cleanups.push(() => privateRedis.stop())
      redisUrl = privateRedis.url
    }
    const prefix = `bench-runner-${Date.now().toString(36)}`
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: null })
    cleanups.push(async () => {
      // Only this run's keys, under its own prefix.
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
        cursor = next
        if (keys.length > 0) await redis.unlink(...keys)
      } while (cursor !== '0')
      redis.disconnect()
    })

    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    const dev = await deployDevContracts(anvil.rpcUrl, { nodeKeys: [...RUNNER_KEYS, BASELINE_KEY] })
    cleanups.push(async () => dev.provider.destroy())
    await fundKeys(dev, [...RUNNER_KEYS, BASELINE_KEY])
    const chainId = dev.chainId
    const registry = await loadJobRegistry(join(root, 'jobs'), chainId)
    const job = registry.byName(JOB_NAME)
    if (!job) throw new Error(`no job named "${JOB_NAME}" in jobs/`)

    const feedKey = `bench-${Date.now()}`
    const feedServer = createFeedServer({ keys: [feedKey], chains: { local: anvil.rpcUrl } })
    const feedUrl = await feedServer.listen(0)
    cleanups.push(() => feedServer.close())

    const adapterPort = await freePort()
    const baseEnv: Record<string, string> = {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      RPC_URL: anvil.rpcUrl,
      ...allFamilyUrls(feedUrl),
      FEED_API_KEY: feedKey,
      EA_PORT: String(adapterPort),
      METRICS_PORT: String(await freePort()),
      JOBS_DIR: join(root, 'jobs'),
      CHAIN_POLL_INTERVAL_MS: process.env.CHAIN_POLL_INTERVAL_MS ?? '100',
      BRIDGE_DATAFEED_URL: `http://127.0.0.1:${adapterPort}`,
      LOG_LEVEL,
    }
    const adapter = await startPart('adapter', 'adapter', { ...baseEnv, OPERATIONS_PORT: String(await freePort()) }, /adapter listening/)
    cleanups.push(() => adapter.stop())
    const worker = await startPart('worker', 'worker', { ...baseEnv, METRICS_PORT: String(await freePort()), OPERATIONS_PORT: String(await freePort()) }, /fetch workers running/)
    cleanups.push(() => worker.stop())

    const watcher = new BlockWatcher(anvil.rpcUrl)
    await watcher.start()
    cleanups.push(() => watcher.stop())
    const ctx: Context = { rpcUrl: anvil.rpcUrl, chainId, dev, watcher, redis, baseEnv, externalJobId: job.externalJobId, prefix, pids: { adapter: adapter.child.pid!, worker: worker.child.pid!, anvil: anvil.process.pid, bench: process.pid } }

    console.log(`bench: N=${N}, anvil automine, runner/adapter/worker each in its own process, LOG_LEVEL=${LOG_LEVEL}, load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`)
    const baseline = await runBaseline(ctx)
    console.log(`baseline: ${N} pre-signed fulfilments in ${baseline.seconds} s = ${baseline.perSecond}/s`)
    const phases: RunnerPhaseResult[] = []
    for (const keys of KEY_COUNTS) {
      const { result } = await runRunnerPhase(ctx, keys)
      phases.push(result)
      console.log(`runner, ${keys} key(s): ${result.fulfilled}/${N} fulfilled, ${result.fulfilmentsPerSecond}/s, p50 ${result.latencyMs.p50} ms`)
    }
    const memory = {
      adapter: memoryOf(adapter.child.pid!)?.peakMb ?? Number.NaN,
      worker: memoryOf(worker.child.pid!)?.peakMb ?? Number.NaN,
      anvil: memoryOf(anvil.process.pid)?.peakMb ?? Number.NaN,
      'bench (feed service, load generator)': memoryOf(process.pid)?.peakMb ?? Number.NaN,
      ...Object.fromEntries(phases.map((phase) => [`runner (${phase.keys} key${phase.keys > 1 ? 's' : ''}; ${phase.runnerIdleRssMb} MB when started)`, phase.runnerPeakRssMb])),
    }
    printReport(baseline, phases, memory)

    const at = new Date().toISOString().replace(/[:.]/g, '-')
    const file = join(root, 'bench/results', `runner-${at}.json`)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, JSON.stringify({
      at: new Date().toISOString(),
      requests: N,
      machine: { cpus: cpus().length, node: process.version, loadAverageAtEnd: loadavg().map((value) => round(value, 2)) },
      settings: { CHAIN_POLL_INTERVAL_MS: baseEnv.CHAIN_POLL_INTERVAL_MS, LOG_LEVEL },
      baseline,
      runner: phases.map((phase) => ({ ...phase, ratioToBaseline: round(phase.fulfilmentsPerSecond / baseline.perSecond, 3) })),
      peakRssMb: memory,
    }, null, 2) + '\n')
    console.log(`\nwritten to ${file}`)
  } finally {
    await cleanup()
  }
}

function printReport(baseline: BaselineResult, phases: RunnerPhaseResult[], memory: Record<string, number>): void {
  const rows: string[][] = [['', 'fulfilled', 'fulfil/s', 'vs baseline', 'p50 ms', 'p95 ms', 'p99 ms', 'requests/s', 'max in flight', 'exactly once', 'Redis cmds/req', 'anvil flushes']]
  rows.push(['baseline (pre-signed, 1 key)', `${baseline.allMined ? N : '<' + N}`, String(baseline.perSecond), '1', '-', '-', '-', '-', String(baseline.inFlight), '-', '-', '-'])
  for (const phase of phases) {
    rows.push([
      `runner, ${phase.keys} key${phase.keys > 1 ? 's' : ''}`, String(phase.fulfilled), String(phase.fulfilmentsPerSecond), String(round(phase.fulfilmentsPerSecond / baseline.perSecond, 2)),
      String(phase.latencyMs.p50), String(phase.latencyMs.p95), String(phase.latencyMs.p99), String(phase.requestsPerSecond), String(phase.maxInFlight), phase.exactlyOnce ? 'yes' : 'NO',
      String(phase.redisCommandsPerRequest), String(phase.anvilFlushes),
    ])
  }
  console.log('\n' + table(rows))
  console.log('\nwhere the time goes (run records, p50 / p95 ms)')
  const stageNames = Object.keys(phases[0]?.stagesMs ?? {})
  console.log(table([['', ...stageNames], ...phases.map((phase) => [`runner, ${phase.keys} key(s)`, ...stageNames.map((name) => `${phase.stagesMs[name]?.p50} / ${phase.stagesMs[name]?.p95}`)])]))
  console.log('\nCPU ms per request, by process')
  const processNames = Object.keys(phases[0]?.cpuMsPerRequest ?? {})
  console.log(table([['', ...processNames], ...phases.map((phase) => [`runner, ${phase.keys} key(s)`, ...processNames.map((name) => String(phase.cpuMsPerRequest[name]))])]))
  console.log('\npeak RSS (VmHWM) per process')
  console.log(table([['process', 'MB'], ...Object.entries(memory).map(([name, mb]) => [name, String(mb)])]))
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)))
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] as number)).join('  ')).join('\n')
}

await main()
process.exit(process.exitCode ?? 0)
