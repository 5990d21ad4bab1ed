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
 * 6. the push phases: webhook calls beside the same server's empty route (`phases/webhook.ts`), cron
 *    jobs idle and ticking (`phases/cron.ts`), flux jobs one and many on a block-time chain
 *    (`phases/flux.ts`).
 * BENCH_PHASES=burst runs 1-4 alone, BENCH_PHASES=blocktime 5 alone, BENCH_PHASES=push 6 alone (or
 * webhook, cron, flux, each alone).
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
import { compileContracts } from '../../src/chain/artifacts.ts'
import { stopCurrentChain, type Context } from './load.ts'
import { memoryOf, round, signingMicros } from './measure.ts'
import { runBare } from './phases/bare.ts'
import { runBaseline } from './phases/baseline.ts'
import { runBlockTimePhase, type BlockTimeResult } from './phases/blocktime.ts'
import { printBlockTime } from './report-blocktime.ts'
import { runCronPhase } from './phases/cron.ts'
import { runFluxPhase } from './phases/flux.ts'
import { runWebhookPhase } from './phases/webhook.ts'
import { printPush, type PushRun } from './report-push.ts'
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
  AGAINST,
  KEY_COUNTS,
  LOG_LEVEL,
  N,
  PACED_COUNT,
  PACED_RATE,
  PAIRS,
  PERF,
  RUNNER_NODE_ARGS,
  RUN_BLOCK_TIME,
  RUN_BURSTS,
  RUN_CRON,
  RUN_FLUX,
  RUN_WEBHOOK,
  RUNNER_RPC,
  WARMUP,
} from './settings.ts'
import { runAgainst } from './phases/against.ts'
import { buildThisCheckout, prepareReference, thisCheckout } from './reference.ts'
import { printAgainst } from './report-against.ts'
import { allTargets, writeResults, type Run } from './results.ts'
import { startServices, type Cleanups } from './services.ts'
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
  return { ...bursts, blockTime, push: await runPushPhases(ctx) }
}

/** The push phases BENCH_PHASES names (all by default), each on a fresh chain with a runner of its own. */
async function runPushPhases(ctx: Context): Promise<PushRun> {
  const push: PushRun = {}
  if (RUN_WEBHOOK) push.webhook = await runWebhookPhase(ctx)
  if (RUN_CRON) push.cron = await runCronPhase(ctx)
  if (RUN_FLUX) push.flux = await runFluxPhase(ctx)
  return push
}

/**
 * `--against`: the runner phases of this checkout and of the reference, alternated in pairs (the
 * baseline, the cold and warm pairs of the other phases and the block-time phases are not run).
 */
async function runAgainstPhases(here: Context, there: Context): Promise<Run> {
  const against = await runAgainst(here, there, phasePlans(), AGAINST as string)
  return {
    baseline: undefined,
    bare: undefined,
    phases: [],
    pairs: [],
    warm: undefined,
    blockTime: [],
    push: {},
    against,
  }
}

async function runBursts(ctx: Context): Promise<Omit<Run, 'blockTime' | 'push'>> {
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
  // Once, however many ask (a signal, the watchdog, the end of the run): each waits for the same.
  let cleaning: Promise<void> | undefined
  const cleanup = () =>
    (cleaning ??= (async () => {
      await stopCurrentChain().catch(() => undefined)
      for (const step of cleanups.reverse()) await step().catch(() => undefined)
    })())
  const onSignal = (code: number) => {
    interruptedWith = code
    void cleanup().finally(() => process.exit(code))
  }
  process.once('SIGINT', () => onSignal(130))
  process.once('SIGTERM', () => onSignal(143))
  // Bounded: whatever hangs, the bench ends (and stops what it started).
  const watchdog = setTimeout(() => {
    console.error(`bench: gave up after ${BENCH_TIMEOUT_MS} ms`)
    void cleanup().finally(() => process.exit(2))
  }, BENCH_TIMEOUT_MS)
  watchdog.unref()
  try {
    // The reference first: if it does not build, nothing else has started.
    const reference =
      AGAINST === undefined
        ? undefined
        : await prepareReference(AGAINST, (remove) => cleanups.push(remove))
    // Both sides compiled: each runs its own dist/, not one of them through tsx.
    if (reference) await buildThisCheckout()
    const ctx = await startServices(cleanups, await thisCheckout(compileContracts()))
    const there = reference ? await startServices(cleanups, reference) : undefined
    signingMicros(50)
    const speedAtStart = signingMicros()
    console.log(
      `bench: N=${N}, anvil automine (a fresh chain per phase), runner/adapter/worker/feed service each in its own process, runner RPC ${RUNNER_RPC}, LOG_LEVEL=${LOG_LEVEL}, ${PERF.length > 0 ? `perf recording every ${PERF.join(', ')} (BENCH_PERF: it costs CPU), ` : ''}${RUNNER_NODE_ARGS.length > 0 ? `runner node flags ${RUNNER_NODE_ARGS.join(' ')}, ` : ''}load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs; this machine signs a fulfilment in ${speedAtStart} µs`,
    )
    const run = there ? await runAgainstPhases(ctx, there) : await runPhases(ctx)
    const memory = peakMemory(ctx, run)
    if (run.against) printAgainst(run.against)
    if (run.baseline) printReport(run.baseline, run.bare, run.phases, memory)
    printBlockTime(run.blockTime)
    printPush(run.push)
    if (!run.against) printTargets(allTargets(run))
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

/** The exit code of the signal that interrupted the run, if one did. */
let interruptedWith: number | undefined

await main().catch((error: unknown) => {
  // What an interruption broke (a build it ended, a phase whose processes it stopped) is not news.
  if (interruptedWith === undefined) throw error
})
process.exit(interruptedWith ?? process.exitCode ?? 0)
