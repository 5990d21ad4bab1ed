/**
 * Runner benchmark (`npm run bench`, N from `BENCH_REQUESTS` or the first argument, default 1,000).
 * Each feedrunner part runs in its own process (`bin/feedrunner.js adapter`, `worker`, `runner`, and
 * the local feed service `feeds serve`), so memory and CPU are measured per process and this process
 * is only the load generator. Phases, each on a fresh chain (`load.ts` says why):
 *
 * 1. baseline (`phases/baseline.ts`): N pre-signed fulfilments of N open requests, straight to anvil:
 *    the chain's own limit;
 * 2. the bare fulfiller (`phases/bare.ts`, `bare-fulfiller.ts`; BENCH_BARE=0 leaves it out): N requests
 *    answered by one process with one key and no adapter, queue or Redis, the ceiling of a fulfiller
 *    for this job on this chain;
 * 3. the runner with one sender key, then with four (BENCH_KEYS), N requests sent as fast as the
 *    consumer can; then one key paced at BENCH_RATE/s for BENCH_PACED_SECONDS
 *    (`phases/runner-phase.ts`);
 * 4. with BENCH_PAIRS=k, k more pairs of the bare fulfiller and the one-key burst, one after the other,
 *    for the two ratio targets over alternating pairs (`phases/pairs.ts`);
 * 5. the block-time chain (`phases/blocktime.ts`): anvil mining every BENCH_BLOCK_TIME seconds, the
 *    runner with its defaults behind a counting JSON-RPC proxy, once per transport (BENCH_BLOCKTIME_RPC):
 *    blocks from confirmation to fulfilment, and the RPC bill idle and per request.
 * BENCH_PHASES=burst runs 1-4 alone, BENCH_PHASES=blocktime 5 alone.
 * and the peak RSS (VmHWM) of every process. Prints tables and issue 20's targets as ratios of this
 * run's figures (`report.ts`), and writes bench/results/runner-<timestamp>.json.
 *
 * Transactions are signed before a phase and sent in nonce order, each JSON-RPC call answered before
 * the next (a sender's transactions arriving out of order can stay in anvil's pool:
 * foundry-rs/foundry#10122). anvil answers eth_sendRawTransaction only once the transaction is mined,
 * so one transaction per call means one block per transaction; a JSON-RPC batch lets anvil put several
 * in a block. If anvil still leaves ready transactions in its pool and stops mining blocks with
 * transactions, the pool backstop `feedrunner dev` runs too (src/dev/pool-backstop.ts) mines them
 * (counted as "anvil flushes").
 */
import { cpus, loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { compileContracts } from '../../src/chain/artifacts.ts'
import { allFamilyUrls } from '../../src/config/settings.ts'
import { freePort } from '../../src/dev/ports.ts'
import { redisAnswers, startPrivateRedis } from '../../src/dev/redis.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { startPart, stopCurrentChain, type Context } from './load.ts'
import { memoryOf, round, signingMicros } from './measure.ts'
import { runBare } from './phases/bare.ts'
import { runBaseline } from './phases/baseline.ts'
import { runBlockTimePhase, type BlockTimeResult } from './phases/blocktime.ts'
import { printBlockTime } from './report-blocktime.ts'
import { pairOf, printPairs, printWarm, runPairs, runWarmPair } from './phases/pairs.ts'
import { runRunnerPhase, type PhasePlan, type RunnerPhaseResult } from './phases/runner-phase.ts'
import { finishPerfRecordings } from './perf-record.ts'
import { oneKeyBurst, printReport, printTargets } from './report.ts'
import {
  BARE,
  BENCH_TIMEOUT_MS,
  BLOCK_TIME,
  BLOCK_TIME_TRANSPORTS,
  checkSettings,
  JOB_NAME,
  KEY_COUNTS,
  LOG_LEVEL,
  N,
  PACED_COUNT,
  PACED_RATE,
  PAIRS,
  PERF,
  RUNNER_NODE_ARGS,
  REDIS_SOURCES,
  RUN_BLOCK_TIME,
  RUN_BURSTS,
  RUNNER_RPC,
  WARMUP,
} from './settings.ts'
import { RedisSourceTap } from './redis-commands.ts'
import { allTargets, writeResults, type Run } from './results.ts'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
type Cleanups = Array<() => Promise<void>>

/** Redis for the run: a private redis-server by default (no other load on it, its command counts ours alone). */
async function openRedis(cleanups: Cleanups): Promise<{ redis: Redis; url: string; pid?: number }> {
  let url = process.env.BENCH_REDIS_URL ?? ''
  // Its CPU per request is counted with the other processes' (a Redis given by URL is not ours to measure).
  let pid: number | undefined
  if (!url || !(await redisAnswers(url))) {
    const privateRedis = await startPrivateRedis()
    cleanups.push(() => privateRedis.stop())
    url = privateRedis.url
    pid = privateRedis.process.pid
  }
  return { redis: new Redis(url, { maxRetriesPerRequest: null }), url, pid }
}

/** Redis, the feed service, the adapter and the fetch worker: what every runner phase shares. */
async function startServices(cleanups: Cleanups): Promise<Context> {
  const { redis, url: redisUrl, pid: redisPid } = await openRedis(cleanups)
  const redisSources = REDIS_SOURCES ? new RedisSourceTap() : undefined
  if (redisSources) {
    await redisSources.start(redisUrl)
    cleanups.push(async () => redisSources.stop())
  }
  const prefix = `bench-runner-${Date.now().toString(36)}`
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
  // The job specs name the chain id, which every fresh anvil shares (31337).
  const job = (await loadJobRegistry(join(root, 'jobs'), 31337)).byName(JOB_NAME)
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
  const adapterPort = await freePort()
  const baseEnv: Record<string, string> = {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    ...allFamilyUrls(`http://127.0.0.1:${feedPort}`),
    FEED_API_KEY: feedKey,
    EA_PORT: String(adapterPort),
    METRICS_PORT: String(await freePort()),
    JOBS_DIR: join(root, 'jobs'),
    CHAIN_POLL_INTERVAL_MS: process.env.CHAIN_POLL_INTERVAL_MS ?? '100',
    BRIDGE_DATAFEED_URL: `http://127.0.0.1:${adapterPort}`,
    LOG_LEVEL,
    // One consumer makes every request of a phase: the per-requester bounds would refuse them.
    REQUESTER_MAX_CONCURRENT_RUNS: '0',
    REQUESTER_MAX_REQUESTS_PER_MINUTE: '0',
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
  return {
    anvilPort: await freePort(),
    artifacts: compileContracts(),
    redis,
    baseEnv,
    externalJobId: job.externalJobId,
    confirmations: Math.max(1, job.job.spec.minIncomingConfirmations ?? 1),
    prefix,
    pids: {
      adapter: adapter.child.pid!,
      worker: worker.child.pid!,
      feeds: feeds.child.pid!,
      bench: process.pid,
      ...(redisPid === undefined ? {} : { redis: redisPid }),
    },
    anvilPeakRssMb: [],
    ...(redisSources ? { redisSources } : {}),
  }
}

function phasePlans(): PhasePlan[] {
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
  return plans
}

async function runPhases(ctx: Context): Promise<Run> {
  const bursts = RUN_BURSTS
    ? await runBursts(ctx)
    : { baseline: undefined, bare: undefined, phases: [], pairs: [], warm: undefined }
  const blockTime: BlockTimeResult[] = []
  if (RUN_BLOCK_TIME)
    for (const transport of BLOCK_TIME_TRANSPORTS) {
      const result = await runBlockTimePhase(ctx, transport)
      blockTime.push(result)
      console.log(
        `block time ${BLOCK_TIME} s, ${transport}: ${result.blockTime.fulfilled}/${result.blockTime.requests} fulfilled, ${round(result.blockTime.nextBlockShare * 100, 1)} % in the next block, idle ${result.rpc.idleCallsPerBlock} calls a block, ${result.rpc.callsPerRequest} a request beyond the shared per-block reads (${result.rpc.callsPerRequestBeyondIdle} beyond the idle rate)`,
      )
    }
  return { ...bursts, blockTime }
}

async function runBursts(ctx: Context): Promise<Omit<Run, 'blockTime'>> {
  const baseline = await runBaseline(ctx)
  console.log(
    `baseline: ${N} pre-signed fulfilments in ${baseline.seconds} s = ${baseline.perSecond}/s (batches of ${baseline.window}, ${baseline.blocks} blocks)`,
  )
  const bare = BARE ? await runBare(ctx) : undefined
  if (bare)
    console.log(
      `bare fulfiller: ${bare.fulfilled}/${bare.requests} fulfilled, ${bare.fulfilmentsPerSecond}/s, ${bare.cpuMsPerFulfilment} ms of its own CPU per fulfilment, p50 ${bare.latencyMs.p50} ms, load average ${loadavg()[0]?.toFixed(1)}`,
    )
  const phases: RunnerPhaseResult[] = []
  for (const plan of phasePlans()) {
    const result = await runRunnerPhase(ctx, plan)
    phases.push(result)
    console.log(
      `${plan.label}: ${result.fulfilled}/${result.requests} fulfilled, ${result.fulfilmentsPerSecond}/s, p50 ${result.latencyMs.p50} ms (requests sent at ${result.sentPerSecond}/s, mined at ${result.requestsPerSecond}/s), load average ${loadavg()[0]?.toFixed(1)}`,
    )
  }
  const oneKey = oneKeyBurst(phases)
  const pairs =
    PAIRS > 0 && bare && oneKey ? [pairOf(0, bare, oneKey), ...(await runPairs(ctx, PAIRS))] : []
  const warm = WARMUP > 0 && bare && oneKey ? await runWarmPair(ctx, WARMUP) : undefined
  return { baseline, bare, phases, pairs, warm }
}

function peakMemory(ctx: Context, run: Run): Record<string, number> {
  const peak = (pid: number | undefined) =>
    pid === undefined ? Number.NaN : (memoryOf(pid)?.peakMb ?? Number.NaN)
  return {
    adapter: peak(ctx.pids.adapter),
    worker: peak(ctx.pids.worker),
    'feed service': peak(ctx.pids.feeds),
    [`anvil (max of ${ctx.anvilPeakRssMb.length} phases)`]: Math.max(
      ...ctx.anvilPeakRssMb.filter((mb) => !Number.isNaN(mb)),
    ),
    'bench (load generator)': peak(process.pid),
    ...(run.bare ? { 'bare fulfiller': run.bare.peakRssMb } : {}),
    ...Object.fromEntries(
      run.phases.map((phase) => [
        `${phase.label.replace('runner, ', 'runner (')}; ${phase.runnerIdleRssMb} MB when started)`,
        phase.runnerPeakRssMb,
      ]),
    ),
  }
}

async function main(): Promise<void> {
  checkSettings()
  const cleanups: Cleanups = []
  const cleanup = async () => {
    await stopCurrentChain().catch(() => undefined)
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
    const ctx = await startServices(cleanups)
    signingMicros(50)
    const speedAtStart = signingMicros()
    console.log(
      `bench: N=${N}, anvil automine (a fresh chain per phase), runner/adapter/worker/feed service each in its own process, runner RPC ${RUNNER_RPC}, LOG_LEVEL=${LOG_LEVEL}, ${PERF.length > 0 ? `perf recording every ${PERF.join(', ')} (BENCH_PERF: it costs CPU), ` : ''}${RUNNER_NODE_ARGS.length > 0 ? `runner node flags ${RUNNER_NODE_ARGS.join(' ')}, ` : ''}load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs; this machine signs a fulfilment in ${speedAtStart} µs`,
    )
    const run = await runPhases(ctx)
    const memory = peakMemory(ctx, run)
    if (run.baseline) printReport(run.baseline, run.bare, run.phases, memory)
    printBlockTime(run.blockTime)
    printTargets(allTargets(run))
    if (run.pairs.length > 0) printPairs(run.pairs)
    const oneKey = oneKeyBurst(run.phases)
    if (run.warm && run.bare && oneKey) printWarm(pairOf(0, run.bare, oneKey), oneKey, run.warm)
    const speedAtEnd = signingMicros()
    console.log(
      `\nmachine speed: a fulfilment signed in ${speedAtStart} µs before the phases, ${speedAtEnd} µs after (compare runs by it)`,
    )
    const file = writeResults(ctx, run, memory, { atStart: speedAtStart, atEnd: speedAtEnd })
    console.log(`\nwritten to ${file}`)
  } finally {
    await cleanup()
    const recordings = await finishPerfRecordings()
    if (recordings.length > 0)
      console.log(
        `\nperf recordings (BENCH_PERF), each read by npm run bench:perf-shares -- <file>:\n${recordings.join('\n')}`,
      )
  }
}

await main()
process.exit(process.exitCode ?? 0)
