/**
 * The cron phase: what a cron job costs the runner while it waits for its tick, and what a tick costs.
 * One runner, its jobs folder rewritten between three stretches of BENCH_PUSH_SECONDS each (SIGHUP),
 * each once the runner has reloaded the folder:
 *
 * 1. BENCH_CRON_JOBS cron jobs (100) not due in the stretch (once a year): the runner idle with that
 *    many schedules loaded (its cron ticker looks at each job's next instant by Redis's clock);
 * 2. the same jobs every BENCH_CRON_EVERY_SECONDS (5): each tick a run of a pipeline that asks the
 *    chain nothing, so a tick's Redis commands and RPC calls are the tick's own (the stretch's less
 *    stretch 1's rate, over the ticks the run records hold);
 * 3. one of those jobs: the runner idle, warm as in 1, the reference for 1's CPU.
 */
import { randomUUID } from 'node:crypto'
import { waitFor } from '../../../src/dev/process.ts'
import { readLoadedJobs } from '../../../src/runner/loaded-jobs.ts'
import { openChain, type Context } from '../load.ts'
import { round } from '../measure.ts'
import { CRON_EVERY_SECONDS, CRON_JOBS, PUSH_SECONDS, step } from '../settings.ts'
import {
  costsBetween,
  markCosts,
  pause,
  startPushStage,
  totalOf,
  type CostMark,
  type JobsFolder,
  type PushRunner,
  type StretchCosts,
} from './push-runner.ts'

export interface CronResult {
  jobs: number
  everySeconds: number
  /** The runner with one cron job, none due. */
  idleOneJob: StretchCosts
  /** With `jobs` cron jobs loaded, none due. */
  idleLoaded: StretchCosts
  /** The runner's CPU ms a second more with `jobs` jobs loaded than with one. */
  idleCpuMsPerSecondBeyondOne: number
  ticks: number
  /** Beyond the loaded idle rate, per tick. */
  perTick: {
    redisCommands: number
    rpcCalls: number
    cpuMs: number
    rpcByMethod: Record<string, number>
  }
}

const ids = Array.from({ length: Math.max(CRON_JOBS, 1) }, () => randomUUID())

/** Each job's name carries its schedule, so the jobs a runner says it loaded say which folder it read. */
function nameOf(index: number, schedule: string): string {
  return `bench cron ${index} ${schedule}`
}

function cronSpecs(count: number, schedule: string): Record<string, string> {
  return Object.fromEntries(
    ids.slice(0, count).map((id, index) => [
      `cron-${index}.toml`,
      `type = "cron"
schemaVersion = 1
name = "${nameOf(index, schedule)}"
externalJobID = "${id}"
evmChainID = "31337"
schedule = "${schedule}"
observationSource = """
    answer [type="sum" values="[1, ${index}]"]
"""
`,
    ]),
  )
}

const NEVER_IN_THE_STRETCH = 'CRON_TZ=UTC 0 0 0 1 1 *'

/** The runner of the phase, and how its jobs are swapped and its stretches read. */
interface CronBench {
  folder: JobsFolder
  runner: PushRunner
  mark(): Promise<CostMark>
  /** The names of the jobs the runner says it has loaded (loaded-jobs.ts). */
  loaded(): Promise<string[]>
  runs(): Promise<number>
}

/** Serves `count` cron jobs on `schedule` from now on; resolves once the runner says it loaded them. */
async function serve(bench: CronBench, count: number, schedule: string): Promise<void> {
  bench.folder.write(cronSpecs(count, schedule))
  bench.runner.reload()
  const wanted = Array.from({ length: count }, (_, index) => nameOf(index, schedule)).sort()
  await waitFor(
    `${count} cron jobs loaded`,
    async () => (await bench.loaded()).sort().join('\n') === wanted.join('\n'),
    60_000,
  )
}

/** A stretch of PUSH_SECONDS with nothing due. */
async function idleStretch(bench: CronBench): Promise<StretchCosts> {
  const from = await bench.mark()
  await pause(PUSH_SECONDS * 1000)
  return costsBetween(from, await bench.mark())
}

/** Resolves once no run has started for 3 s (bounded): the ticks taken so far have all run. */
async function settled(bench: CronBench): Promise<void> {
  let last = await bench.runs()
  let stillSince = Date.now()
  for (const until = Date.now() + 120_000; Date.now() < until && Date.now() - stillSince < 3_000;) {
    await pause(500)
    const now = await bench.runs()
    if (now !== last) [last, stillSince] = [now, Date.now()]
  }
}

/**
 * A stretch of PUSH_SECONDS with every job ticking, then the ticks stopped and every tick taken run:
 * its costs, and the ticks (runs) they paid for.
 */
async function tickingStretch(bench: CronBench): Promise<{ costs: StretchCosts; ticks: number }> {
  const before = await bench.runs()
  await serve(bench, CRON_JOBS, `@every ${CRON_EVERY_SECONDS}s`)
  await waitFor('the first ticks', async () => (await bench.runs()) > before, 60_000)
  const from = await bench.mark()
  const runsAtStart = await bench.runs()
  await pause(PUSH_SECONDS * 1000)
  await serve(bench, CRON_JOBS, NEVER_IN_THE_STRETCH)
  await settled(bench)
  const to = await bench.mark()
  return { costs: costsBetween(from, to), ticks: (await bench.runs()) - runsAtStart }
}

export async function runCronPhase(ctx: Context): Promise<CronResult> {
  const label = 'cron'
  const prefix = `${ctx.prefix}-${label}`
  const stage = await startPushStage(ctx, await openChain(ctx.artifacts), {
    label,
    specs: cronSpecs(1, NEVER_IN_THE_STRETCH),
  })
  const { chain, proxy, folder, runner } = stage
  const bench: CronBench = {
    folder,
    runner,
    mark: () => markCosts(ctx, runner.part.pid, proxy),
    loaded: async () =>
      ((await readLoadedJobs(ctx.redis, prefix, chain.anvil.chainId))?.jobs ?? []).map(
        (job) => job.name,
      ),
    // Each tick is a run, and the run records' index holds every run.
    runs: () => ctx.redis.zcard(`${prefix}:runner:runs`),
  }
  try {
    // The runner's start-up work (compiling, its first reads) behind it before any stretch.
    await pause(5_000)
    await serve(bench, CRON_JOBS, NEVER_IN_THE_STRETCH)
    step(`${label}: ${CRON_JOBS} jobs loaded, idle for ${PUSH_SECONDS} s`)
    const idleLoaded = await idleStretch(bench)
    step(`${label}: ${CRON_JOBS} jobs every ${CRON_EVERY_SECONDS} s for ${PUSH_SECONDS} s`)
    const { costs, ticks } = await tickingStretch(bench)
    await serve(bench, 1, NEVER_IN_THE_STRETCH)
    step(`${label}: one job, idle for ${PUSH_SECONDS} s`)
    const idleOneJob = await idleStretch(bench)
    return {
      jobs: CRON_JOBS,
      everySeconds: CRON_EVERY_SECONDS,
      idleOneJob,
      idleLoaded,
      idleCpuMsPerSecondBeyondOne: round(idleLoaded.cpuMsPerSecond - idleOneJob.cpuMsPerSecond, 2),
      ticks,
      perTick: perTick(costs, idleLoaded, ticks),
    }
  } finally {
    await stage.close()
  }
}

/** A stretch's costs beyond the idle rate, per tick. */
function perTick(stretch: StretchCosts, idle: StretchCosts, ticks: number): CronResult['perTick'] {
  const beyond = (value: number, idleValue: number) =>
    round((value - (idleValue / idle.seconds) * stretch.seconds) / Math.max(1, ticks), 2)
  return {
    redisCommands: beyond(stretch.redisCommands, idle.redisCommands),
    rpcCalls: beyond(totalOf(stretch.rpcCalls), totalOf(idle.rpcCalls)),
    cpuMs: beyond(stretch.cpuMsPerSecond * stretch.seconds, idle.cpuMsPerSecond * idle.seconds),
    rpcByMethod: Object.fromEntries(
      Object.entries(stretch.rpcCalls).map(([method, calls]) => [
        method,
        beyond(calls, idle.rpcCalls[method] ?? 0),
      ]),
    ),
  }
}
