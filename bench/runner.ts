/**
 * Runner benchmark (`npm run bench`, N from `BENCH_REQUESTS` or the first argument, default 1,000).
 * Each feedrunner part runs in its own process (`bin/feedrunner.js adapter`, `worker`, `runner`, and
 * the local feed service `feeds serve`), so memory and CPU are measured per process and this process
 * is only the load generator. Phases:
 *
 * 1. baseline: N requests are made first, then N pre-signed `fulfillOracleRequest2` transactions for
 *    them are sent straight to anvil from one authorised key, in nonce order, as JSON-RPC batches of
 *    BENCH_BASELINE_WINDOW: the chain's own limit;
 * 2. the runner with one sender key, then with four (BENCH_KEYS): N pre-signed requests sent as fast as
 *    the consumer can; fulfilments per second and latency from the request's block to the fulfilment's
 *    block (p50/p95/p99). A burst of N is queueing: its latency is about N/2 / throughput;
 * 3. the runner with one key, paced: BENCH_RATE requests per second for BENCH_PACED_SECONDS, so the
 *    latency is the runner's own and not time spent queueing behind a burst;
 * and the peak RSS (VmHWM) of every process. Prints a table and writes bench/results/<timestamp>.json.
 *
 * Every phase runs on its own fresh anvil on the same port. anvil 1.7.1 rebuilds the whole state trie
 * for every block, so a block costs it more the more storage the chain holds: the consumer keeps 2.6
 * slots per request before its answer (measured with anvil_dumpState) and one more after, the Operator
 * one per open request, and under Prague each block also adds one to the EIP-2935 history (the dev
 * chain runs Cancun for that reason, src/dev/anvil.ts). Phases sharing one chain
 * would be penalised by the phases before them and the baseline would not be comparable. The
 * contracts land at the same addresses on every fresh chain, so the adapter, fetch worker and feed
 * service keep running across phases; each phase starts its own runner process.
 *
 * Transactions are signed before a phase and sent in nonce order, each JSON-RPC call answered before
 * the next (a sender's transactions arriving out of order can stay in anvil's pool:
 * foundry-rs/foundry#10122). anvil answers eth_sendRawTransaction only once the transaction is mined,
 * so one transaction per call means one block per transaction; a JSON-RPC batch lets anvil put several
 * in a block. If anvil still leaves ready transactions in its pool and stops mining blocks with
 * transactions, the pool backstop `feedrunner dev` runs too (src/dev/pool-backstop.ts) mines them
 * (counted as "anvil flushes").
 *
 * Block times: anvil's block timestamps have one-second resolution, so each block is stamped with the
 * time its newHeads notification reached the bench (one WebSocket subscription); a latency is the
 * difference of two such stamps (the request's block, the fulfilment's block), both seen the same way.
 */
import { cpus, loadavg, tmpdir } from 'node:os'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AbiCoder, Transaction, Wallet, type Log } from 'ethers'
import { Redis } from 'ioredis'
import { WebSocket, type RawData } from 'ws'
import { compileContracts, type ArtifactSet } from '../src/chain/artifacts.ts'
import { allFamilyUrls } from '../src/config/settings.ts'
import {
  decodeOperatorLog,
  encodeFulfillOracleRequest2,
  ORACLE_REQUEST_TOPIC,
  type OracleRequestEvent,
} from '../src/chain/operator.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../src/dev/anvil.ts'
import { startPoolBackstop, type PoolBackstop } from '../src/dev/pool-backstop.ts'
import { deployDevContracts, type DevContracts } from '../src/dev/deploy.ts'
import { startFeedrunnerProcess, type FeedrunnerProcess } from '../src/dev/feedrunner-process.ts'
import { freePort, isPortFree } from '../src/dev/ports.ts'
import { waitFor } from '../src/dev/process.ts'
import { redisAnswers, startPrivateRedis } from '../src/dev/redis.ts'
import {
  requestsOfTransactions,
  sendRawInNonceOrder,
  signConsumerRequests,
  waitForFulfilments,
  waitForNonce,
  type ConsumerRequest,
} from '../src/dev/requests.ts'
import { loadJobRegistry } from '../src/runner/job-registry.ts'
import { RunStore, type RunRecord } from '../src/runner/run-record.ts'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const N = Number(process.argv[2] ?? process.env.BENCH_REQUESTS ?? 1_000)
const KEY_COUNTS = (process.env.BENCH_KEYS ?? '1,4')
  .split(',')
  .filter((item) => item.trim() !== '')
  .map(Number)
const PACED_RATE = Number(process.env.BENCH_RATE ?? 50)
const PACED_SECONDS = Number(process.env.BENCH_PACED_SECONDS ?? 10)
const PACED_COUNT = Math.round(PACED_RATE * PACED_SECONDS)
/**
 * Fulfilments per JSON-RPC batch in the baseline, the window that gave the highest rate. Measured
 * (1,000 fulfilments of 1,000 open requests on a fresh chain, shared 2-core machine): one per call
 * 24-42/s (a block per transaction at ~30 ms each); the previous 16 concurrent calls 87-100/s; ordered
 * batches of 16 ~200/s, 64 220-390/s, 256 715-920/s with no flush; all 1,000 in one batch 540-580/s,
 * because anvil left part of it in its pool (3 flushes by the pool backstop, each after 300 ms idle).
 */
const BASELINE_WINDOW = Number(process.env.BENCH_BASELINE_WINDOW ?? 256)
/**
 * Requests per JSON-RPC batch in the burst phases ("as fast as the consumer can": 1,000 requests on a
 * fresh chain went in at 240-360/s, against 58-70/s one per call). A call is answered once its requests
 * are mined, so at most this many of them wait in anvil's pool, fewer than fit one block (30M block
 * gas / 600k gas limit = 50): a batch does not leave requests behind.
 */
const REQUEST_WINDOW = 32
/**
 * `ws` or `http`: the RPC_URL the runner gets. Over ws its listener is woken by each new head instead
 * of polling every CHAIN_POLL_INTERVAL_MS (its sender still uses http). Measured on the paced phase at
 * 5/s: block -> received p50 11-14 ms over ws, 81-91 ms over http, latency p50 43-58 ms against
 * 127-143 ms; at 20/s, with the runner near saturation on a shared 2-core machine, the two were within
 * the noise (p50 150-580 ms either way). ws is never worse, so it is the default.
 */
const RUNNER_RPC = process.env.BENCH_RUNNER_RPC ?? 'ws'
/** Extra anvil arguments for every phase's chain, e.g. `--hardfork prague` (the dev chain runs Cancun). */
const ANVIL_ARGS = (process.env.BENCH_ANVIL_ARGS ?? '').split(' ').filter(Boolean)
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info'
/** Node flags for each runner process, e.g. `--max-old-space-size=256` (NODE_OPTIONS would reach every process). */
const RUNNER_NODE_ARGS = (process.env.BENCH_RUNNER_NODE_ARGS ?? '').split(' ').filter(Boolean)
const PHASE_TIMEOUT_MS = Math.max(60_000, N * 200)
const PHASE_COUNT = 1 + KEY_COUNTS.length + (PACED_COUNT > 0 ? 1 : 0)
const BENCH_TIMEOUT_MS = PHASE_COUNT * (PHASE_TIMEOUT_MS + 30_000) + 120_000
const JOB_NAME = 'datafeed game-odds (uint256)'
/** Equal parameters: after the first fetch the adapter answers from its cache, so the runner is measured. */
const GAME_ODDS_PARAMS: Array<[string, string]> = [
  ['region', 'england'],
  ['sport', 'soccer'],
  ['league', 'epl'],
  ['date', '2024-08-16'],
  ['homeTeam', 'Man United'],
  ['path', '$.data.homeMoneyLine'],
  ['times', '100'],
]
const EXPECTED_VALUE = 160n
const RUNNER_KEYS = ANVIL_PRIVATE_KEYS.slice(1, 5)
const BASELINE_KEY = ANVIL_PRIVATE_KEYS[5]

const benchStart = Date.now()
/** Progress on stderr, with seconds since the start. */
function step(what: string): void {
  console.error(`[${((Date.now() - benchStart) / 1000).toFixed(1)} s] ${what}`)
}

if (!Number.isInteger(N) || N < 1)
  throw new Error(
    `N must be a positive integer (got ${process.argv[2] ?? process.env.BENCH_REQUESTS})`,
  )
if (!KEY_COUNTS.every((keys) => Number.isInteger(keys) && keys >= 1 && keys <= RUNNER_KEYS.length))
  throw new Error(
    `BENCH_KEYS must list key counts from 1 to ${RUNNER_KEYS.length} (got ${process.env.BENCH_KEYS})`,
  )
if (!(PACED_COUNT >= 0) || !(PACED_RATE > 0))
  throw new Error('BENCH_RATE must be above 0 and BENCH_PACED_SECONDS at least 0')
if (!Number.isInteger(BASELINE_WINDOW) || BASELINE_WINDOW < 1)
  throw new Error('BENCH_BASELINE_WINDOW must be a positive integer')
if (RUNNER_RPC !== 'ws' && RUNNER_RPC !== 'http')
  throw new Error('BENCH_RUNNER_RPC must be ws or http')

// ---------------------------------------------------------------- small helpers

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  ] as number
}

function summary(values: readonly number[]): {
  p50: number
  p95: number
  p99: number
  max: number
} {
  const sorted = [...values].sort((a, b) => a - b)
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  }
}

function round(value: number, digits = 1): number {
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await response.json()) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result as T
}

/** Peak resident set (VmHWM) and current RSS of a process, in MB. */
function memoryOf(pid: number): { peakMb: number; rssMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
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

/**
 * Stamps every block with the time its newHeads notification arrived (ms since the epoch), from one
 * WebSocket subscription: no polling, so stamping costs the bench next to nothing.
 */
class BlockWatcher {
  readonly seenAt = new Map<number, number>()
  /** Blocks stamped without their own notification (when a later head arrived first). */
  gapFilled = 0
  private last = -1
  private socket: WebSocket | undefined
  private stopping = false

  constructor(
    private readonly rpcUrl: string,
    private readonly wsUrl: string,
  ) {}

  async start(): Promise<void> {
    this.last = Number(await rpc<string>(this.rpcUrl, 'eth_blockNumber'))
    const socket = new WebSocket(this.wsUrl)
    this.socket = socket
    await new Promise<void>((resolveOpen, reject) => {
      socket.once('open', () => resolveOpen())
      socket.once('error', reject)
    })
    socket.on('error', (error) => console.error(`block watcher: ${error.message}`))
    socket.on('close', () => {
      if (!this.stopping)
        console.error('block watcher: the WebSocket closed; blocks from now on are not stamped')
    })
    const subscribed = new Promise<void>((resolveSubscribed, reject) => {
      socket.on('message', (data: RawData) => {
        const now = Date.now()
        const message = JSON.parse(data.toString()) as {
          id?: number
          method?: string
          params?: { result?: { number?: string } }
          error?: { message: string }
        }
        if (message.id === 1)
          return message.error
            ? reject(new Error(`eth_subscribe: ${message.error.message}`))
            : resolveSubscribed()
        const header = message.params?.result
        if (message.method === 'eth_subscription' && header?.number)
          this.stamp(Number(header.number), now)
      })
    })
    socket.send(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }),
    )
    await subscribed
  }

  private stamp(head: number, now: number): void {
    if (head <= this.last) return
    this.gapFilled += head - this.last - 1
    for (let block = this.last + 1; block <= head; block++) this.seenAt.set(block, now)
    this.last = head
  }

  /** Waits until the watcher has stamped `block`. */
  async seen(block: number): Promise<number> {
    if (!this.seenAt.has(block))
      await waitFor(`block ${block} to be seen`, async () => this.seenAt.has(block), 30_000, 5)
    return this.seenAt.get(block) as number
  }

  async stop(): Promise<void> {
    this.stopping = true
    const socket = this.socket
    if (!socket || socket.readyState === WebSocket.CLOSED) return
    const closed = new Promise<void>((resolveClose) => socket.once('close', () => resolveClose()))
    socket.close()
    await Promise.race([closed, new Promise((resolveDelay) => setTimeout(resolveDelay, 1_000))])
  }
}

// ---------------------------------------------------------------- one fresh chain per phase

interface Chain {
  anvil: Anvil
  dev: DevContracts
  watcher: BlockWatcher
  /** Mines what anvil's automine left in its pool, as `feedrunner dev` does; counts it. */
  backstop: PoolBackstop
  /** Peak RSS of this phase's anvil, read just before it stops. */
  peakRssMb: number
  stop(): Promise<void>
}

/** The chain of the running phase, stopped by the bench's cleanup if the bench is interrupted. */
let currentChain: Chain | undefined

/**
 * Starts anvil on `port` (the previous phase's anvil must have let go of it), deploys the contracts
 * (same addresses every time), funds the keys and starts a block watcher.
 */
async function openChain(port: number, artifacts: ArtifactSet): Promise<Chain> {
  await currentChain?.stop()
  await waitFor(`port ${port} to be free for a new anvil`, () => isPortFree(port), 10_000, 50)
  const anvil = await startAnvil({ port, extraArgs: ANVIL_ARGS })
  let dev: DevContracts | undefined
  try {
    dev = await deployDevContracts(anvil.rpcUrl, {
      nodeKeys: [...RUNNER_KEYS, BASELINE_KEY],
      artifacts,
    })
    await fundKeys(dev, [...RUNNER_KEYS, BASELINE_KEY])
    const watcher = new BlockWatcher(anvil.rpcUrl, anvil.wsUrl)
    await watcher.start()
    const backstop = startPoolBackstop(anvil.rpcUrl)
    const opened = dev
    const chain: Chain = {
      anvil,
      dev: opened,
      watcher,
      backstop,
      peakRssMb: Number.NaN,
      async stop() {
        if (currentChain === chain) currentChain = undefined
        chain.peakRssMb = memoryOf(anvil.process.pid)?.peakMb ?? chain.peakRssMb
        backstop.stop()
        await watcher.stop()
        await opened.provider.destroy()
        await anvil.stop()
      },
    }
    currentChain = chain
    return chain
  } catch (error) {
    await dev?.provider.destroy()
    await anvil.stop()
    throw error
  }
}

// ---------------------------------------------------------------- feedrunner processes

/** `bin/feedrunner.js <args>`, CPU-profiled when its name starts with BENCH_PROFILE; a long phase needs only the end of its output. */
function startPart(
  name: string,
  args: readonly string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<FeedrunnerProcess> {
  const profile =
    process.env.BENCH_PROFILE && name.startsWith(process.env.BENCH_PROFILE)
      ? ['--cpu-prof', `--cpu-prof-dir=${join(tmpdir(), 'feedrunner-bench-profiles')}`]
      : []
  const nodeArgs = args[0] === 'runner' ? [...RUNNER_NODE_ARGS, ...profile] : profile
  return startFeedrunnerProcess({ name, args, env, ready, nodeArgs, keepOutputChars: 20_000 })
}

interface HeapPeak {
  usedMb: number
  totalMb: number
  externalMb: number
}

/** Polls a runner's /metrics (prom-client's nodejs_* gauges) and keeps the largest heap figures. */
function sampleHeapPeak(metricsUrl: string, everyMs = 1_000): { stop(): Promise<HeapPeak> } {
  const peak: HeapPeak = { usedMb: 0, totalMb: 0, externalMb: 0 }
  const gauge = (text: string, name: string) =>
    Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN) / 2 ** 20
  const sample = async () => {
    const text = await (await fetch(metricsUrl)).text()
    peak.usedMb = Math.max(peak.usedMb, round(gauge(text, 'nodejs_heap_size_used_bytes'), 1))
    peak.totalMb = Math.max(peak.totalMb, round(gauge(text, 'nodejs_heap_size_total_bytes'), 1))
    peak.externalMb = Math.max(
      peak.externalMb,
      round(gauge(text, 'nodejs_external_memory_bytes'), 1),
    )
  }
  const timer = setInterval(() => void sample().catch(() => undefined), everyMs)
  return {
    async stop() {
      clearInterval(timer)
      await sample().catch(() => undefined)
      return peak
    },
  }
}

/** The sum of a counter over its labels (every key's), scraped once; NaN when it cannot be read. */
async function counterSum(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text().catch(() => '')
  const values = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].map(
    (match) => Number(match[1]),
  )
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0)
}

/**
 * A fixed piece of CPU work, timed while nothing else runs: µs per signed fulfilment transaction.
 * This VM's speed moves between runs (the same code's runner CPU per request from 9 to 12 ms), so
 * runs are compared against it.
 */
function signingMicros(samples = 300): number {
  const wallet = new Wallet(RUNNER_KEYS[0] as string)
  const tx = {
    type: 2,
    chainId: 31337,
    to: wallet.address,
    data: `0x${'ab'.repeat(260)}`,
    gasLimit: 500_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 10n ** 9n,
  }
  const started = performance.now()
  for (let nonce = 0; nonce < samples; nonce++) {
    const unsigned = Transaction.from({ ...tx, nonce })
    unsigned.signature = wallet.signingKey.sign(unsigned.unsignedHash)
  }
  return Math.round(((performance.now() - started) / samples) * 1000)
}

// ---------------------------------------------------------------- phases

/** What stays the same across phases; each phase brings its own chain. */
interface Context {
  anvilPort: number
  artifacts: ArtifactSet
  redis: Redis
  baseEnv: Record<string, string>
  externalJobId: string
  prefix: string
  /** Long-lived processes whose CPU time is accounted per phase, besides the runner and anvil. */
  pids: Record<string, number>
  /** Peak RSS of each phase's anvil. */
  anvilPeakRssMb: number[]
}

const REQUEST: (ctx: Context) => ConsumerRequest = (ctx) => ({
  externalJobId: ctx.externalJobId,
  valueType: 'uint256',
  params: GAME_ODDS_PARAMS,
  payment: 0n,
})

/** A `send` over plain HTTP, for waitForNonce. */
function minedSender(rpcUrl: string) {
  return { send: (method: string, params: unknown[]) => rpc<unknown>(rpcUrl, method, params) }
}

interface BaselineResult {
  transactions: number
  /** Transactions per JSON-RPC batch, sent one batch after another. */
  window: number
  seconds: number
  perSecond: number
  allMined: boolean
  /** anvil's CPU time per fulfilment (ms). */
  anvilCpuMsPerTx: number
  /** anvil's CPU time per request while the baseline's requests were made and mined (ms). */
  anvilCpuMsPerRequest: number
  blocks: number
  anvilFlushes: number
}

/** N pre-signed fulfilments of real requests, straight to the chain from one key. */
async function runBaseline(ctx: Context): Promise<BaselineResult> {
  const chain = await openChain(ctx.anvilPort, ctx.artifacts)
  try {
    const { anvil, dev, backstop } = chain
    const fromBlock = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber')) + 1
    step(`baseline: making ${N} requests`)
    const requests = await signConsumerRequests(
      dev.consumer,
      dev.deployer,
      Array.from({ length: N }, () => REQUEST(ctx)),
    )
    const requestCpuBefore = cpuMsOf(anvil.process.pid)
    const sentAt = await sendRawInNonceOrder(anvil.rpcUrl, requests.raws, {
      window: REQUEST_WINDOW,
    })
    const sent = await requestsOfTransactions(
      dev.provider,
      dev.addresses.operator,
      requests.hashes,
      sentAt,
      { fromBlock, timeoutMs: PHASE_TIMEOUT_MS },
    )
    const anvilCpuMsPerRequest = round((cpuMsOf(anvil.process.pid) - requestCpuBefore) / N, 2)
    step('baseline: requests mined, signing the fulfilments')
    const toBlock = Math.max(...sent.map((item) => item.blockNumber))
    const events = (
      await dev.provider.getLogs({
        address: dev.addresses.operator,
        topics: [ORACLE_REQUEST_TOPIC],
        fromBlock,
        toBlock,
      })
    )
      .map((log: Log) => decodeOperatorLog(log, dev.chainId))
      .filter((event): event is OracleRequestEvent => event?.kind === 'request')
    if (events.length !== N)
      throw new Error(`baseline: expected ${N} OracleRequest logs, found ${events.length}`)

    const wallet = new Wallet(BASELINE_KEY)
    const nonce = Number(
      await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [wallet.address, 'pending']),
    )
    const block = await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', [
      'latest',
      false,
    ])
    const maxFeePerGas = BigInt(block.baseFeePerGas) * 3n + 10n ** 9n
    const raws = await Promise.all(
      events.map((event, index) =>
        wallet.signTransaction({
          type: 2,
          chainId: dev.chainId,
          nonce: nonce + index,
          to: dev.addresses.operator,
          gasLimit: 500_000,
          maxFeePerGas,
          maxPriorityFeePerGas: 10n ** 9n,
          data: encodeFulfillOracleRequest2(
            event,
            AbiCoder.defaultAbiCoder().encode(
              ['bytes32', 'uint256'],
              [event.requestId, EXPECTED_VALUE],
            ),
          ),
        }),
      ),
    )
    step('baseline: sending')
    const flushesBefore = backstop.flushes
    const headBefore = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber'))
    const cpuBefore = cpuMsOf(anvil.process.pid)
    const started = performance.now()
    await sendRawInNonceOrder(anvil.rpcUrl, raws, { window: BASELINE_WINDOW })
    await waitForNonce(minedSender(anvil.rpcUrl), wallet.address, nonce + N, 60_000)
    const seconds = (performance.now() - started) / 1000
    const anvilCpuMsPerTx = round((cpuMsOf(anvil.process.pid) - cpuBefore) / N, 2)
    const blocks = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber')) - headBefore
    const fulfilled = await waitForFulfilments(
      dev.consumer,
      dev.provider,
      events.map((event) => event.requestId),
      { fromBlock: toBlock, timeoutMs: 10_000 },
    )
    return {
      transactions: N,
      window: BASELINE_WINDOW,
      seconds: round(seconds, 2),
      perSecond: round(N / seconds),
      allMined: fulfilled.size === N,
      anvilCpuMsPerTx,
      anvilCpuMsPerRequest,
      blocks,
      anvilFlushes: backstop.flushes - flushesBefore,
    }
  } finally {
    await chain.stop()
    ctx.anvilPeakRssMb.push(chain.peakRssMb)
  }
}

interface PhasePlan {
  /** Row label and queue prefix suffix. */
  label: string
  id: string
  keys: number
  requests: number
  /** Requests per second; undefined = as fast as the consumer can (a burst). */
  perSecond?: number
}

interface RunnerPhaseResult {
  label: string
  keys: number
  paced: boolean
  requests: number
  fulfilled: number
  /** Each request answered by exactly one OracleResponse, none reverted. */
  exactlyOnce: boolean
  /** Requests per second as mined (first to last request block seen). */
  requestsPerSecond: number
  /** Requests per second as the bench sent them (first to last send). */
  sentPerSecond: number
  /** Fulfilled / (last fulfilment block seen - first request block seen). */
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
  /** The most the runner's V8 heap held and had reserved, sampled from its /metrics every second (MB). */
  runnerPeakHeap: HeapPeak
  /** CPU time each process used during the phase, per request (ms). */
  cpuMsPerRequest: Record<string, number>
  /** Redis commands (all processes, Lua scripts count once) per request. */
  redisCommandsPerRequest: number
  /** Times anvil left transactions in its pool and the bench mined them (see flushStuckPool). */
  anvilFlushes: number
  /** Blocks mined during the phase (requests and fulfilments). */
  blocks: number
  /** Fulfilment transactions the runner re-signed with higher fees because they sat unmined for blocks. */
  bumps: number
  /** Distinct blocks holding the phase's requests, its fulfilments, and neither (empty or foreign). */
  blockKinds: { withRequests: number; withFulfilments: number; withNeither: number }
}

async function runRunnerPhase(ctx: Context, plan: PhasePlan): Promise<RunnerPhaseResult> {
  const chain = await openChain(ctx.anvilPort, ctx.artifacts)
  const { anvil, dev, watcher, backstop } = chain
  const count = plan.requests
  const prefix = `${ctx.prefix}-${plan.id}`
  const nodeKeys = RUNNER_KEYS.slice(0, plan.keys)
  let runner: FeedrunnerProcess | undefined
  let stopping = false
  try {
    // Signed now, so the phase itself costs the bench one JSON-RPC call per request (or per batch).
    const signed = await signConsumerRequests(
      dev.consumer,
      dev.deployer,
      Array.from({ length: count }, () => REQUEST(ctx)),
    )
    const head = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber'))
    const operationsPort = await freePort()
    const started = await startPart(
      plan.label,
      ['runner'],
      {
        ...ctx.baseEnv,
        RPC_URL: RUNNER_RPC === 'ws' ? anvil.wsUrl : anvil.rpcUrl,
        QUEUE_PREFIX: prefix,
        NODE_PRIVATE_KEY: nodeKeys[0] as string,
        ...(plan.keys > 1 ? { NODE_PRIVATE_KEYS: nodeKeys.join(',') } : {}),
        RUNNER_FROM_BLOCK: String(head + 1),
        OPERATIONS_PORT: String(operationsPort),
      },
      /runner started/,
    )
    runner = started
    started.child.once('exit', (code) => {
      if (!stopping)
        console.error(
          `the runner exited during the phase (code ${code}):\n${started.output().slice(-3_000)}`,
        )
    })
    const runnerPid = started.child.pid!
    const addresses = nodeKeys.map((key) => new Wallet(key).address)
    const noncesBefore = await Promise.all(
      addresses.map(async (address) =>
        Number(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [address, 'latest'])),
      ),
    )
    const pids: Record<string, number> = {
      runner: runnerPid,
      ...ctx.pids,
      anvil: anvil.process.pid,
    }
    const runnerIdleRssMb = memoryOf(runnerPid)?.rssMb ?? Number.NaN
    const heapSampler = sampleHeapPeak(`http://127.0.0.1:${operationsPort}/metrics`)
    const commandsBefore = await redisCommandCount(ctx.redis)
    const flushesBefore = backstop.flushes
    const cpuBefore = Object.fromEntries(
      Object.entries(pids).map(([name, pid]) => [name, cpuMsOf(pid)]),
    )
    const fromBlock = head + 1
    step(
      `${plan.label}: sending ${count} requests${plan.perSecond ? ` at ${plan.perSecond}/s` : ''}`,
    )
    // Paced: what is due on the clock (one at a time unless anvil falls behind); burst: ordered batches, as fast as anvil takes them.
    const sentAt = await sendRawInNonceOrder(anvil.rpcUrl, signed.raws, {
      window: REQUEST_WINDOW,
      perSecond: plan.perSecond,
    })
    const sent = await requestsOfTransactions(
      dev.provider,
      dev.addresses.operator,
      signed.hashes,
      sentAt,
      { fromBlock, timeoutMs: PHASE_TIMEOUT_MS },
    )
    step(`${plan.label}: requests mined, waiting for fulfilments`)
    const fulfilled = await waitForFulfilments(
      dev.consumer,
      dev.provider,
      sent.map((item) => item.requestId),
      { fromBlock, timeoutMs: PHASE_TIMEOUT_MS, pollIntervalMs: 250 },
    )
    const redisCommandsPerRequest = round(
      ((await redisCommandCount(ctx.redis)) - commandsBefore) / count,
      1,
    )
    const cpuMsPerRequest = Object.fromEntries(
      Object.entries(pids).map(([name, pid]) => [
        name,
        round((cpuMsOf(pid) - (cpuBefore[name] as number)) / count, 2),
      ]),
    )
    const runnerPeakRssMb = memoryOf(runnerPid)?.peakMb ?? Number.NaN
    const runnerPeakHeap = await heapSampler.stop()
    const bumps = await counterSum(
      `http://127.0.0.1:${operationsPort}/metrics`,
      'feedrunner_tx_bumped_total',
    )

    const blocks = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber')) - head
    const requestBlocks = sent.map((item) => item.blockNumber)
    const fulfilBlocks = [...fulfilled.values()].map((item) => item.blockNumber)
    const seen = async (block: number) => watcher.seen(block)
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
    const responses = await dev.provider.getLogs({
      address: dev.addresses.operator,
      topics: [dev.operator.interface.getEvent('OracleResponse')!.topicHash],
      fromBlock,
    })
    const ours = new Set(sent.map((item) => item.requestId))
    const responded = responses
      .map((log) => (log.topics[1] ?? '').toLowerCase())
      .filter((id) => ours.has(id))
    const noncesAfter = await Promise.all(
      addresses.map(async (address) =>
        Number(await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [address, 'latest'])),
      ),
    )
    const txCount = noncesAfter.reduce(
      (sum, after, index) => sum + after - (noncesBefore[index] as number),
      0,
    )
    const exactlyOnce =
      fulfilled.size === count &&
      responded.length === count &&
      new Set(responded).size === count &&
      txCount === count

    const runs = new RunStore(ctx.redis, `${prefix}:runner`)
    const records = (await Promise.all(sent.map((item) => runs.get(item.requestId)))).filter(
      (record): record is RunRecord => record !== undefined,
    )
    const stage = (
      from: (record: RunRecord) => number | undefined,
      to: (record: RunRecord) => number | undefined,
    ) => {
      const values = records
        .map((record) => {
          const start = from(record)
          const end = to(record)
          return start === undefined || end === undefined ? undefined : end - start
        })
        .filter((value): value is number => value !== undefined)
      const { p50, p95 } = summary(values)
      return { p50: round(p50, 0), p95: round(p95, 0) }
    }
    const blockSeen = new Map(
      sent.map((item) => [item.requestId, watcher.seenAt.get(item.blockNumber)]),
    )
    const stagesMs = {
      'block -> received': stage(
        (record) => blockSeen.get(record.requestId),
        (record) => record.times.received,
      ),
      'received -> running': stage(
        (record) => record.times.received,
        (record) => record.times.running,
      ),
      'running -> sent': stage(
        (record) => record.times.running,
        (record) => record.times.sent,
      ),
      'sent -> fulfilled (run record)': stage(
        (record) => record.times.sent,
        (record) => record.times.fulfilled,
      ),
    }
    if (watcher.gapFilled > 0)
      console.error(
        `${plan.label}: ${watcher.gapFilled} blocks had no newHeads notification of their own (stamped with the next one's time)`,
      )
    if (fulfilled.size < count)
      console.error(
        `${plan.label}: only ${fulfilled.size} of ${count} fulfilled within ${PHASE_TIMEOUT_MS} ms\n${started.output().slice(-3_000)}`,
      )
    return {
      label: plan.label,
      keys: plan.keys,
      paced: plan.perSecond !== undefined,
      requests: count,
      fulfilled: fulfilled.size,
      exactlyOnce,
      requestsPerSecond: round(count / Math.max(0.001, (lastRequest - firstRequest) / 1000)),
      sentPerSecond: round(
        count / Math.max(0.001, ((sentAt.at(-1) ?? 0) - (sentAt[0] ?? 0)) / 1000),
      ),
      fulfilmentsPerSecond: round(fulfilled.size / seconds),
      drainPerSecond: round(fulfilled.size / Math.max(0.001, (lastFulfil - firstFulfil) / 1000)),
      seconds: round(seconds, 2),
      latencyMs: (({ p50, p95, p99, max }) => ({
        p50: round(p50, 0),
        p95: round(p95, 0),
        p99: round(p99, 0),
        max: round(max, 0),
      }))(summary(latencies)),
      maxInFlight,
      stagesMs,
      runnerPeakRssMb,
      runnerIdleRssMb,
      runnerPeakHeap,
      cpuMsPerRequest,
      redisCommandsPerRequest,
      anvilFlushes: backstop.flushes - flushesBefore,
      blocks,
      bumps,
      blockKinds: {
        withRequests: new Set(requestBlocks).size,
        withFulfilments: new Set(fulfilBlocks).size,
        withNeither: blocks - new Set([...requestBlocks, ...fulfilBlocks]).size,
      },
    }
  } finally {
    stopping = true
    await runner?.stop()
    await chain.stop()
    ctx.anvilPeakRssMb.push(chain.peakRssMb)
  }
}

// ---------------------------------------------------------------- main

/** Gives every key without ether 100 ETH from the deployer (not every listed dev key is a funded anvil account). */
async function fundKeys(dev: DevContracts, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    const address = new Wallet(key).address
    if ((await dev.provider.getBalance(address)) > 0n) continue
    const receipt = await (
      await dev.deployer.sendTransaction({ to: address, value: 10n ** 20n })
    ).wait()
    if (receipt?.status !== 1) throw new Error(`funding ${address} failed`)
  }
}

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<void>> = []
  const cleanup = async () => {
    await currentChain?.stop().catch(() => undefined)
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
    // Its CPU per request is counted with the other processes' (a Redis given by URL is not ours to measure).
    let redisPid: number | undefined
    if (!redisUrl || !(await redisAnswers(redisUrl))) {
      const privateRedis = await startPrivateRedis()
      cleanups.push(() => privateRedis.stop())
      redisUrl = privateRedis.url
      redisPid = privateRedis.process.pid
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

    const artifacts = compileContracts()
    // The job specs name the chain id, which every fresh anvil shares (31337).
    const registry = await loadJobRegistry(join(root, 'jobs'), 31337)
    const job = registry.byName(JOB_NAME)
    if (!job) throw new Error(`no job named "${JOB_NAME}" in jobs/`)

    // The feed service in its own process: this process is only the load generator. Game odds come
    // from its data set, so it needs no chain (--chain is for the blockchain family).
    const feedKey = `bench-${Date.now()}`
    const feedPort = await freePort()
    const feeds = await startPart(
      'feed service',
      ['feeds', 'serve', '--port', String(feedPort)],
      { FEEDS_SERVER_KEYS: feedKey, LOG_LEVEL },
      /feed service listening/,
    )
    cleanups.push(() => feeds.stop())
    const feedUrl = `http://127.0.0.1:${feedPort}`

    const adapterPort = await freePort()
    const baseEnv: Record<string, string> = {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      ...allFamilyUrls(feedUrl),
      FEED_API_KEY: feedKey,
      EA_PORT: String(adapterPort),
      METRICS_PORT: String(await freePort()),
      JOBS_DIR: join(root, 'jobs'),
      CHAIN_POLL_INTERVAL_MS: process.env.CHAIN_POLL_INTERVAL_MS ?? '100',
      BRIDGE_DATAFEED_URL: `http://127.0.0.1:${adapterPort}`,
      LOG_LEVEL,
    }
    const adapter = await startPart(
      'adapter',
      ['adapter'],
      { ...baseEnv, OPERATIONS_PORT: String(await freePort()) },
      /adapter listening/,
    )
    cleanups.push(() => adapter.stop())
    const worker = await startPart(
      'worker',
      ['worker'],
      {
        ...baseEnv,
        METRICS_PORT: String(await freePort()),
        OPERATIONS_PORT: String(await freePort()),
      },
      /fetch workers running/,
    )
    cleanups.push(() => worker.stop())

    const ctx: Context = {
      anvilPort: await freePort(),
      artifacts,
      redis,
      baseEnv,
      externalJobId: job.externalJobId,
      prefix,
      pids: {
        adapter: adapter.child.pid!,
        worker: worker.child.pid!,
        feeds: feeds.child.pid!,
        bench: process.pid,
        ...(redisPid === undefined ? {} : { redis: redisPid }),
      },
      anvilPeakRssMb: [],
    }

    signingMicros(50)
    const speedAtStart = signingMicros()
    console.log(
      `bench: N=${N}, anvil automine (a fresh chain per phase), runner/adapter/worker/feed service each in its own process, runner RPC ${RUNNER_RPC}, LOG_LEVEL=${LOG_LEVEL}, ${RUNNER_NODE_ARGS.length > 0 ? `runner node flags ${RUNNER_NODE_ARGS.join(' ')}, ` : ''}load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs; this machine signs a fulfilment in ${speedAtStart} µs`,
    )
    const baseline = await runBaseline(ctx)
    console.log(
      `baseline: ${N} pre-signed fulfilments in ${baseline.seconds} s = ${baseline.perSecond}/s (batches of ${baseline.window}, ${baseline.blocks} blocks)`,
    )
    const plans: PhasePlan[] = KEY_COUNTS.map((keys) => ({
      label: `runner, ${keys} key${keys > 1 ? 's' : ''}`,
      id: `k${keys}`,
      keys,
      requests: N,
    }))
    if (PACED_COUNT > 0)
      plans.push({
        label: `runner, 1 key, paced at ${PACED_RATE}/s`,
        id: 'paced',
        keys: 1,
        requests: PACED_COUNT,
        perSecond: PACED_RATE,
      })
    const phases: RunnerPhaseResult[] = []
    for (const plan of plans) {
      const result = await runRunnerPhase(ctx, plan)
      phases.push(result)
      console.log(
        `${plan.label}: ${result.fulfilled}/${result.requests} fulfilled, ${result.fulfilmentsPerSecond}/s, p50 ${result.latencyMs.p50} ms (requests sent at ${result.sentPerSecond}/s, mined at ${result.requestsPerSecond}/s), load average ${loadavg()[0]?.toFixed(1)}`,
      )
    }
    const memory = {
      adapter: memoryOf(adapter.child.pid!)?.peakMb ?? Number.NaN,
      worker: memoryOf(worker.child.pid!)?.peakMb ?? Number.NaN,
      'feed service': memoryOf(feeds.child.pid!)?.peakMb ?? Number.NaN,
      [`anvil (max of ${ctx.anvilPeakRssMb.length} phases)`]: Math.max(
        ...ctx.anvilPeakRssMb.filter((mb) => !Number.isNaN(mb)),
      ),
      'bench (load generator)': memoryOf(process.pid)?.peakMb ?? Number.NaN,
      ...Object.fromEntries(
        phases.map((phase) => [
          `${phase.label.replace('runner, ', 'runner (')}; ${phase.runnerIdleRssMb} MB when started)`,
          phase.runnerPeakRssMb,
        ]),
      ),
    }
    printReport(baseline, phases, memory)
    const speedAtEnd = signingMicros()
    console.log(
      `\nmachine speed: a fulfilment signed in ${speedAtStart} µs before the phases, ${speedAtEnd} µs after (compare runs by it)`,
    )

    const at = new Date().toISOString().replace(/[:.]/g, '-')
    const file = join(root, 'bench/results', `runner-${at}.json`)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(
      file,
      JSON.stringify(
        {
          at: new Date().toISOString(),
          requests: N,
          machine: {
            cpus: cpus().length,
            node: process.version,
            loadAverageAtEnd: loadavg().map((value) => round(value, 2)),
            signingMicros: { atStart: speedAtStart, atEnd: speedAtEnd },
          },
          settings: {
            CHAIN_POLL_INTERVAL_MS: baseEnv.CHAIN_POLL_INTERVAL_MS,
            LOG_LEVEL,
            runnerRpc: RUNNER_RPC,
            baselineWindow: BASELINE_WINDOW,
            requestWindow: REQUEST_WINDOW,
            pacedRate: PACED_RATE,
            pacedSeconds: PACED_SECONDS,
            anvilArgs: ANVIL_ARGS,
            freshChainPerPhase: true,
          },
          baseline,
          runner: phases
            .filter((phase) => !phase.paced)
            .map((phase) => ({
              ...phase,
              ratioToBaseline: round(phase.fulfilmentsPerSecond / baseline.perSecond, 3),
            })),
          paced: phases.filter((phase) => phase.paced),
          peakRssMb: memory,
        },
        null,
        2,
      ) + '\n',
    )
    console.log(`\nwritten to ${file}`)
  } finally {
    await cleanup()
  }
}

function printReport(
  baseline: BaselineResult,
  phases: RunnerPhaseResult[],
  memory: Record<string, number>,
): void {
  const rows: string[][] = [
    [
      '',
      'fulfilled',
      'fulfil/s',
      'vs baseline',
      'p50 ms',
      'p95 ms',
      'p99 ms',
      'requests/s',
      'max in flight',
      'exactly once',
      'Redis cmds/req',
      'blocks',
      'with req / ful / neither',
      'bumps',
      'anvil flushes',
    ],
  ]
  rows.push([
    `baseline (pre-signed, 1 key, batches of ${baseline.window})`,
    `${baseline.allMined ? N : '<' + N}`,
    String(baseline.perSecond),
    '1',
    '-',
    '-',
    '-',
    '-',
    String(baseline.window),
    '-',
    '-',
    String(baseline.blocks),
    '-',
    '-',
    String(baseline.anvilFlushes),
  ])
  for (const phase of phases) {
    rows.push([
      phase.label,
      `${phase.fulfilled}/${phase.requests}`,
      String(phase.fulfilmentsPerSecond),
      phase.paced ? '-' : String(round(phase.fulfilmentsPerSecond / baseline.perSecond, 2)),
      String(phase.latencyMs.p50),
      String(phase.latencyMs.p95),
      String(phase.latencyMs.p99),
      String(phase.requestsPerSecond),
      String(phase.maxInFlight),
      phase.exactlyOnce ? 'yes' : 'NO',
      String(phase.redisCommandsPerRequest),
      String(phase.blocks),
      `${phase.blockKinds.withRequests} / ${phase.blockKinds.withFulfilments} / ${phase.blockKinds.withNeither}`,
      String(phase.bumps),
      String(phase.anvilFlushes),
    ])
  }
  console.log('\n' + table(rows))
  console.log('\nwhere the time goes (run records, p50 / p95 ms)')
  const stageNames = Object.keys(phases[0]?.stagesMs ?? {})
  console.log(
    table([
      ['', ...stageNames],
      ...phases.map((phase) => [
        phase.label,
        ...stageNames.map((name) => `${phase.stagesMs[name]?.p50} / ${phase.stagesMs[name]?.p95}`),
      ]),
    ]),
  )
  console.log(
    `\nCPU ms per request, by process (baseline: anvil ${baseline.anvilCpuMsPerTx} ms per fulfilment)`,
  )
  const processNames = Object.keys(phases[0]?.cpuMsPerRequest ?? {})
  console.log(
    table([
      ['', ...processNames],
      ...phases.map((phase) => [
        phase.label,
        ...processNames.map((name) => String(phase.cpuMsPerRequest[name])),
      ]),
    ]),
  )
  const oneKey = phases.find((phase) => !phase.paced && phase.keys === 1)
  if (oneKey) console.log(`\n${halfBaselineBudget(baseline, oneKey)}`)
  console.log('\npeak RSS (VmHWM) per process')
  console.log(
    table([['process', 'MB'], ...Object.entries(memory).map(([name, mb]) => [name, String(mb)])]),
  )
  console.log(
    "\nthe runner's V8 heap at its largest (sampled each second: used / reserved / external, MB)",
  )
  console.log(
    table([
      ['', 'used', 'reserved', 'external'],
      ...phases.map((phase) => [
        phase.label,
        String(phase.runnerPeakHeap.usedMb),
        String(phase.runnerPeakHeap.totalMb),
        String(phase.runnerPeakHeap.externalMb),
      ]),
    ]),
  )
}

/**
 * The CPU a request may cost the whole machine at half the baseline's rate, against what the chain
 * alone takes of it at its cheapest (anvil mining the request in the load generator's batches and the
 * fulfilment in the baseline's), and what the one-key phase spent in the feedrunner processes and Redis.
 */
function halfBaselineBudget(baseline: BaselineResult, oneKey: RunnerPhaseResult): string {
  const cores = cpus().length
  const halfRate = baseline.perSecond / 2
  const budgetMs = (cores * 1_000) / halfRate
  const chainMs = baseline.anvilCpuMsPerRequest + baseline.anvilCpuMsPerTx
  const cpu = oneKey.cpuMsPerRequest
  const feedrunnerMs = ['runner', 'adapter', 'worker', 'feeds', 'redis'].reduce(
    (sum, name) => sum + (cpu[name] ?? 0),
    0,
  )
  return [
    `half the baseline (${round(halfRate)}/s) leaves ${round(budgetMs, 2)} ms of CPU per request on ${cores} cores, for everything;`,
    `the chain's share at its cheapest: anvil ${baseline.anvilCpuMsPerRequest} ms mining the request + ${baseline.anvilCpuMsPerTx} ms the fulfilment = ${round(chainMs, 2)} ms,`,
    `so ${round(budgetMs - chainMs, 2)} ms are left for the runner, adapter, fetch worker, feed service, Redis and load generator`,
    `(the one-key burst spent ${round(feedrunnerMs, 2)} ms in the feedrunner processes and Redis, ${cpu.runner} ms of it in the runner)`,
  ].join('\n')
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? '').length)),
  )
  return rows
    .map((row) => row.map((cell, column) => cell.padEnd(widths[column] as number)).join('  '))
    .join('\n')
}

await main()
process.exit(process.exitCode ?? 0)
