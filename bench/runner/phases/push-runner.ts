/**
 * What the push phases (webhook.ts, cron.ts, flux.ts) stand on: a jobs folder of the phase's own specs,
 * a runner process started on it with its default settings (as the block-time phase starts one),
 * behind a counting JSON-RPC proxy, and the costs read around a stretch: the runner's CPU, the Redis
 * commands of the whole installation, the runner's JSON-RPC calls by method. A phase changes its
 * jobs by rewriting the folder and sending SIGHUP (the runner reloads JOBS_DIR), so one runner
 * serves both of its stretches.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FeedrunnerProcess } from '../../../src/dev/feedrunner-process.ts'
import { freePort } from '../../../src/dev/ports.ts'
import {
  callsBetween,
  startRpcProxy,
  type RpcCounts,
  type RpcProxy,
} from '../../../src/dev/rpc-call-counter.ts'
import { startPart, type Chain, type Context } from '../load.ts'
import { cpuMsOf, round } from '../measure.ts'
import { redisCommandStats, totalCalls } from '../redis-commands.ts'
import { RUNNER_KEYS, RUNNER_RPC } from '../settings.ts'

/** A folder of job specs the runner reads (JOBS_DIR); `write` replaces what it holds. */
export interface JobsFolder {
  readonly dir: string
  write(specs: Record<string, string>): void
  remove(): void
}

export function jobsFolder(label: string): JobsFolder {
  const dir = mkdtempSync(join(tmpdir(), `feedrunner-bench-${label}-`))
  return {
    dir,
    write(specs) {
      for (const file of readdirSync(dir)) rmSync(join(dir, file))
      for (const [file, text] of Object.entries(specs)) writeFileSync(join(dir, file), text)
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}

export interface PushRunner {
  part: FeedrunnerProcess
  /** The runner's operations server (the runs endpoint of webhook jobs, /metrics, /live). */
  operationsUrl: string
  /** Reloads JOBS_DIR now (SIGHUP; the folder's watch would, a moment later). */
  reload(): void
}

/** A runner on `folder`, reading the chain through `proxy` (BENCH_RUNNER_RPC's transport). */
async function startPushRunner(
  ctx: Context,
  options: { label: string; folder: JobsFolder; proxy: RpcProxy; env?: Record<string, string> },
): Promise<PushRunner> {
  // The runner's own defaults: no CHAIN_POLL_INTERVAL_MS of the burst phases' (100 ms, for a dev
  // chain) unless the caller set one.
  const env: Record<string, string> = { ...ctx.baseEnv }
  if (process.env.CHAIN_POLL_INTERVAL_MS === undefined) delete env.CHAIN_POLL_INTERVAL_MS
  const operationsPort = await freePort()
  const part = await startPart(
    `runner, ${options.label}`,
    ['runner'],
    {
      ...env,
      RPC_URL: RUNNER_RPC === 'ws' ? options.proxy.wsUrl : options.proxy.httpUrl,
      QUEUE_PREFIX: `${ctx.prefix}-${options.label.replace(/\W+/g, '-')}`,
      NODE_PRIVATE_KEY: RUNNER_KEYS[0] as string,
      JOBS_DIR: options.folder.dir,
      OPERATIONS_PORT: String(operationsPort),
      METRICS_PORT: String(await freePort()),
      ...options.env,
    },
    /runner started/,
  )
  return {
    part,
    operationsUrl: `http://127.0.0.1:${operationsPort}`,
    // What the new jobs do is the phase's sign that they are served (a tick's run, a round).
    reload: () => part.kill('SIGHUP'),
  }
}

/** A push phase's runner on its chain, behind its proxy, on its jobs folder. */
export interface PushStage {
  chain: Chain
  proxy: RpcProxy
  folder: JobsFolder
  runner: PushRunner
  /** Stops the runner, the proxy and the chain, and removes the folder. */
  close(): Promise<void>
}

/**
 * Starts a push phase's runner on `chain` (opened by the phase), serving `specs`; whatever fails on
 * the way stops what had started, the chain too.
 */
export async function startPushStage(
  ctx: Context,
  chain: Chain,
  options: { label: string; specs: Record<string, string>; env?: Record<string, string> },
): Promise<PushStage> {
  const folder = jobsFolder(options.label)
  let proxy: RpcProxy | undefined
  const stopChain = async () => {
    await chain.stop()
    ctx.anvilPeakRssMb.push(chain.peakRssMb)
  }
  try {
    folder.write(options.specs)
    proxy = await startRpcProxy(chain.anvil)
    const runner = await startPushRunner(ctx, { ...options, folder, proxy })
    const started = proxy
    return {
      chain,
      proxy: started,
      folder,
      runner,
      async close() {
        await runner.part.stop()
        folder.remove()
        await started.stop()
        await stopChain()
      },
    }
  } catch (error) {
    folder.remove()
    await proxy?.stop()
    await stopChain()
    throw error
  }
}

/** What a stretch is measured by: the runner's CPU, Redis's commands, the runner's RPC calls. */
export interface CostMark {
  atMs: number
  cpuMs: number
  redis: number
  rpc: RpcCounts
}

export async function markCosts(ctx: Context, pid: number, proxy: RpcProxy): Promise<CostMark> {
  return {
    atMs: performance.now(),
    cpuMs: cpuMsOf(pid),
    redis: totalCalls(await redisCommandStats(ctx.redis)),
    rpc: proxy.snapshot(),
  }
}

/** A stretch's costs: seconds, the runner's CPU ms a second, Redis commands and RPC calls by method. */
export interface StretchCosts {
  seconds: number
  cpuMsPerSecond: number
  redisCommands: number
  rpcCalls: Record<string, number>
}

export function costsBetween(before: CostMark, after: CostMark): StretchCosts {
  const seconds = (after.atMs - before.atMs) / 1000
  return {
    seconds: round(seconds, 1),
    cpuMsPerSecond: round((after.cpuMs - before.cpuMs) / seconds, 2),
    redisCommands: after.redis - before.redis,
    rpcCalls: callsBetween(before.rpc, after.rpc),
  }
}

export function totalOf(calls: Record<string, number>): number {
  return Object.values(calls).reduce((sum, value) => sum + value, 0)
}

export const pause = (ms: number) => new Promise((resolveLater) => setTimeout(resolveLater, ms))
