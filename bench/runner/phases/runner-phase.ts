/**
 * The runner's phases: the runner with one sender key, then with several (BENCH_KEYS), N pre-signed
 * requests sent as fast as the consumer can; then one key, paced (BENCH_RATE requests per second for
 * BENCH_PACED_SECONDS), so the latency is the runner's own and not time spent queueing behind a burst
 * (a burst of N is queueing: its latency is about N/2 / throughput). Each phase starts its own runner
 * process (`bin/feedrunner.js runner`) on its own fresh chain; the adapter, the fetch worker and the
 * feed service keep running across phases.
 */
import type { FeedrunnerProcess } from '../../../src/dev/feedrunner-process.ts'
import { freePort } from '../../../src/dev/ports.ts'
import type { SentRequest } from '../../../src/dev/requests.ts'
import { RunStore, type RunRecord } from '../../../src/runner/run-record.ts'
import { openChain, startPart, type Chain, type Context } from '../load.ts'
import {
  counterSum,
  cpuMsOf,
  syscallsOf,
  memoryOf,
  perRequest,
  round,
  rpc,
  sampleHeapPeak,
  summary,
  type HeapPeak,
} from '../measure.ts'
import { redisCommandStats, totalCalls } from '../redis-commands.ts'
import { PHASE_TIMEOUT_MS, RUNNER_KEYS, RUNNER_RPC } from '../settings.ts'
import {
  addressesOf,
  minedNonces,
  outcomeOf,
  sendAndAwaitFulfilments,
  type Outcome,
} from './outcome.ts'
import { signPhaseRequests, warmUpWith } from './warm-up.ts'

export interface PhasePlan {
  /** Row label and queue prefix suffix. */
  label: string
  id: string
  keys: number
  requests: number
  /** Requests per second; undefined = as fast as the consumer can (a burst). */
  perSecond?: number
  /** Requests the runner answers before the measured ones (a warm phase, warm-up.ts). */
  warmUp?: number
}

export interface RunnerPhaseResult extends Outcome {
  label: string
  keys: number
  paced: boolean
  /** Where the time went, from the run records (p50 / p95, ms). */
  stagesMs: Record<string, { p50: number; p95: number }>
  runnerPeakRssMb: number
  /** The runner's RSS once started, before any request. */
  runnerIdleRssMb: number
  /** The most the runner's V8 heap held and had reserved, sampled from its /metrics every second (MB). */
  runnerPeakHeap: HeapPeak
  /** CPU time each process used during the phase, per request (ms). */
  cpuMsPerRequest: Record<string, number>
  /** Read and write system calls per request, by process. */
  syscallsPerRequest: Record<string, number>
  /** Redis commands (all processes; a Lua script and each command it runs) per request. */
  redisCommandsPerRequest: number
  /** The same by command name, and with BENCH_REDIS_SOURCES=1 by what sent them (per request). */
  redisCommands: {
    byCommand: Record<string, number>
    bySource?: Record<string, number>
    /** Argument bytes clients sent per request, by source (BENCH_REDIS_SOURCES=1). */
    bytesBySource?: Record<string, number>
  }
  /** With BENCH_RPC_CALLS=1: the JSON-RPC calls anvil served per request, by method (the load generator's too). */
  rpcCallsPerRequest?: Record<string, number>
  /** Times anvil left transactions in its pool and the bench mined them (the pool backstop). */
  anvilFlushes: number
  /** Fulfilment transactions the runner re-signed with higher fees because they sat unmined for blocks. */
  bumps: number
}

/** A runner process for the phase, reading the chain from `fromBlock`. */
async function startRunner(
  ctx: Context,
  chain: Chain,
  plan: PhasePlan,
  fromBlock: number,
): Promise<{ runner: FeedrunnerProcess; operationsPort: number; stopping: () => void }> {
  const nodeKeys = RUNNER_KEYS.slice(0, plan.keys)
  const operationsPort = await freePort()
  const runner = await startPart(
    plan.label,
    ['runner'],
    {
      ...ctx.baseEnv,
      RPC_URL: RUNNER_RPC === 'ws' ? chain.anvil.wsUrl : chain.anvil.rpcUrl,
      QUEUE_PREFIX: `${ctx.prefix}-${plan.id}`,
      NODE_PRIVATE_KEY: nodeKeys[0] as string,
      ...(plan.keys > 1 ? { NODE_PRIVATE_KEYS: nodeKeys.join(',') } : {}),
      RUNNER_FROM_BLOCK: String(fromBlock),
      OPERATIONS_PORT: String(operationsPort),
    },
    /runner started/,
    ctx.side.bin,
  )
  let stopping = false
  runner.child.once('exit', (code) => {
    if (!stopping)
      console.error(
        `the runner exited during the phase (code ${code}):\n${runner.output().slice(-3_000)}`,
      )
  })
  return { runner, operationsPort, stopping: () => (stopping = true) }
}

/** What the meters of a phase read: every figure counted per request from their start. */
type MeterReadings = Pick<
  RunnerPhaseResult,
  | 'cpuMsPerRequest'
  | 'syscallsPerRequest'
  | 'redisCommandsPerRequest'
  | 'redisCommands'
  | 'rpcCallsPerRequest'
  | 'anvilFlushes'
  | 'runnerPeakHeap'
>

/**
 * The phase's meters, started just before its measured requests: each process's CPU time and system
 * calls, Redis's commands (by command, and by source with BENCH_REDIS_SOURCES=1), anvil's calls
 * (BENCH_RPC_CALLS=1) and flushes, the runner's heap. `read` gives each one's increase per request.
 */
async function startMeters(
  ctx: Context,
  chain: Chain,
  runnerPid: number,
  metricsUrl: string,
): Promise<{ read(count: number): Promise<MeterReadings> }> {
  const { anvil, backstop } = chain
  const pids: Record<string, number> = { runner: runnerPid, ...ctx.pids, anvil: anvil.process.pid }
  const heapSampler = sampleHeapPeak(metricsUrl)
  const commandsBefore = await redisCommandStats(ctx.redis)
  const sourcesBefore = ctx.redisSources?.snapshot()
  const bytesBefore = ctx.redisSources?.bytesSnapshot()
  const flushesBefore = backstop.flushes
  const rpcCallsBefore = anvil.calls()
  const cpuMs = countPerProcess(pids, cpuMsOf)
  const syscalls = countPerProcess(pids, syscallsOf)
  return {
    async read(count) {
      const rpcCallsAfter = anvil.calls()
      const commandsAfter = await redisCommandStats(ctx.redis)
      const sourcesAfter = ctx.redisSources?.snapshot()
      const bytesAfter = ctx.redisSources?.bytesSnapshot()
      return {
        cpuMsPerRequest: cpuMs.perRequest(count, 2),
        syscallsPerRequest: syscalls.perRequest(count, 1),
        redisCommandsPerRequest: round(
          (totalCalls(commandsAfter) - totalCalls(commandsBefore)) / count,
          1,
        ),
        redisCommands: {
          byCommand: perRequest(commandsBefore, commandsAfter, count),
          ...(sourcesBefore && sourcesAfter
            ? { bySource: perRequest(sourcesBefore, sourcesAfter, count) }
            : {}),
          ...(bytesBefore && bytesAfter
            ? { bytesBySource: perRequest(bytesBefore, bytesAfter, count, 0) }
            : {}),
        },
        ...(rpcCallsBefore && rpcCallsAfter
          ? { rpcCallsPerRequest: perRequest(rpcCallsBefore, rpcCallsAfter, count) }
          : {}),
        anvilFlushes: backstop.flushes - flushesBefore,
        runnerPeakHeap: await heapSampler.stop(),
      }
    },
  }
}

/** What went wrong in a phase, on stderr: blocks stamped late, requests left unfulfilled. */
function reportShortfalls(
  plan: PhasePlan,
  chain: Chain,
  runner: FeedrunnerProcess,
  fulfilled: number,
): void {
  if (chain.watcher.gapFilled > 0)
    console.error(
      `${plan.label}: ${chain.watcher.gapFilled} blocks had no newHeads notification of their own (stamped with the next one's time)`,
    )
  if (fulfilled < plan.requests)
    console.error(
      `${plan.label}: only ${fulfilled} of ${plan.requests} fulfilled within ${PHASE_TIMEOUT_MS} ms\n${runner.output().slice(-3_000)}`,
    )
}

export async function runRunnerPhase(ctx: Context, plan: PhasePlan): Promise<RunnerPhaseResult> {
  const chain = await openChain(ctx.artifacts, { deploy: ctx.side.deploy })
  const { anvil } = chain
  let started: Awaited<ReturnType<typeof startRunner>> | undefined
  try {
    const phase = await signPhaseRequests(ctx, chain, plan.requests, plan.warmUp)
    const blockNumber = async () => Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber'))
    started = await startRunner(ctx, chain, plan, (await blockNumber()) + 1)
    const { runner, operationsPort } = started
    const runnerPid = runner.child.pid!
    const runnerIdleRssMb = memoryOf(runnerPid)?.rssMb ?? Number.NaN
    await warmUpWith(chain, phase.warmUp, plan.label, runnerPid)
    const head = await blockNumber()
    const addresses = addressesOf(RUNNER_KEYS.slice(0, plan.keys))
    const noncesBefore = await minedNonces(chain, addresses)
    const metricsUrl = `http://127.0.0.1:${operationsPort}/metrics`
    const meters = await startMeters(ctx, chain, runnerPid, metricsUrl)
    const delivered = await sendAndAwaitFulfilments(chain, phase.measured, {
      label: plan.label,
      fromBlock: head + 1,
      perSecond: plan.perSecond,
    })
    await runsFinished(metricsUrl, plan.requests + (plan.warmUp ?? 0))
    const readings = await meters.read(plan.requests)
    const runnerPeakRssMb = memoryOf(runnerPid)?.peakMb ?? Number.NaN
    const bumps = await counterSum(metricsUrl, 'feedrunner_tx_bumped_total')
    const outcome = await outcomeOf(chain, delivered, { head, addresses, noncesBefore })
    // Another commit's run records (`--against`) may not read as this checkout's: no stages then.
    const stagesMs = await stagesOf(ctx, chain, plan, delivered.sent).catch(() => ({}))
    reportShortfalls(plan, chain, runner, outcome.fulfilled)
    return {
      label: plan.label,
      keys: plan.keys,
      paced: plan.perSecond !== undefined,
      ...outcome,
      stagesMs,
      runnerPeakRssMb,
      runnerIdleRssMb,
      ...readings,
      bumps,
    }
  } finally {
    started?.stopping()
    await started?.runner.stop()
    await chain.stop()
    ctx.anvilPeakRssMb.push(chain.peakRssMb)
  }
}

/**
 * Waits (10 s at most) until the runner has recorded every run as fulfilled: a fulfilment is seen on
 * chain before its run's last writes (its record, its job's end), which a phase's Redis count includes.
 * Read from the runner's /metrics, every 250 ms: a scrape is not free (the runner serialises every
 * series and reads its queues' depths from Redis, a few ms of its CPU and a BullMQ script on a
 * loaded machine), and the phase's CPU and Redis figures count what it costs.
 */
async function runsFinished(metricsUrl: string, count: number): Promise<void> {
  const fulfilled = () =>
    counterSum(metricsUrl, 'feedrunner_requests_total', 'state="fulfilled"').catch(() => 0)
  for (const until = Date.now() + 10_000; Date.now() < until;) {
    if ((await fulfilled()) >= count) return
    await new Promise((resolveLater) => setTimeout(resolveLater, 250))
  }
}

/** Where the time went, from the runner's run records (p50 / p95 of each stage, ms). */
async function stagesOf(
  ctx: Context,
  chain: Chain,
  plan: PhasePlan,
  sent: readonly SentRequest[],
): Promise<Record<string, { p50: number; p95: number }>> {
  const runs = new RunStore(ctx.redis, `${ctx.prefix}-${plan.id}:runner`, chain.dev.chainId)
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
    sent.map((item) => [item.requestId, chain.watcher.seenAt.get(item.blockNumber)]),
  )
  return {
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
}

/** Reads a counter of each process now; `perRequest` answers each one's increase since, per request. */
function countPerProcess(
  pids: Record<string, number>,
  read: (pid: number) => number,
): { perRequest(count: number, digits: number): Record<string, number> } {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, read(pid)]))
  return {
    perRequest: (count, digits) =>
      Object.fromEntries(
        Object.entries(pids).map(([name, pid]) => [
          name,
          round((read(pid) - (before[name] as number)) / count, digits),
        ]),
      ),
  }
}
