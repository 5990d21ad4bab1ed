/**
 * What a bench run found, as bench/results/runner-<time>.json holds it: the keys of earlier runs,
 * and `targets`, `pairs`, `warm`, `blockTime`, `rpc` and `redis` beside them (docs/performance.md).
 */
import { cpus, loadavg } from 'node:os'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Context } from './load.ts'
import { round } from './measure.ts'
import type { BareResult } from './phases/bare.ts'
import type { BaselineResult } from './phases/baseline.ts'
import type { BlockTimeResult } from './phases/blocktime.ts'
import type { PairResult, WarmPair } from './phases/pairs.ts'
import type { AgainstRun } from './phases/against.ts'
import type { RunnerPhaseResult } from './phases/runner-phase.ts'
import { againstResults } from './report-against.ts'
import { blockTimeTargets } from './report-blocktime.ts'
import { pushTargets, type PushRun } from './report-push.ts'
import { targetsOf } from './report.ts'
import {
  ANVIL_ARGS,
  BASELINE_WINDOW,
  LOG_LEVEL,
  N,
  PACED_RATE,
  PACED_SECONDS,
  REQUEST_WINDOW,
  RUNNER_RPC,
} from './settings.ts'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

export interface Run {
  /** Undefined when only the block-time phases ran (BENCH_PHASES=blocktime). */
  baseline: BaselineResult | undefined
  bare: BareResult | undefined
  phases: RunnerPhaseResult[]
  /** With BENCH_PAIRS: the phases' own pair first, then the pairs run after them. */
  pairs: PairResult[]
  /** With BENCH_WARMUP: the bare fulfiller and the one-key burst, each process warmed first. */
  warm: WarmPair | undefined
  blockTime: BlockTimeResult[]
  /** The push phases run (BENCH_PHASES: webhook, cron, flux). */
  push: PushRun
  /** With `--against <git-ref>`: the runner phases of both checkouts, in alternating pairs. */
  against?: AgainstRun
}

export function writeResults(
  ctx: Context,
  run: Run,
  memory: Record<string, number>,
  speed: { atStart: number; atEnd: number },
): string {
  const { baseline, bare, phases } = run
  const at = new Date().toISOString().replace(/[:.]/g, '-')
  const file = join(root, 'bench/results', `runner-${at}.json`)
  mkdirSync(dirname(file), { recursive: true })
  const results = {
    at: new Date().toISOString(),
    requests: N,
    machine: {
      cpus: cpus().length,
      node: process.version,
      loadAverageAtEnd: loadavg().map((value) => round(value, 2)),
      signingMicros: speed,
    },
    settings: {
      CHAIN_POLL_INTERVAL_MS: ctx.baseEnv.CHAIN_POLL_INTERVAL_MS,
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
        ratioToBaseline: baseline
          ? round(phase.fulfilmentsPerSecond / baseline.perSecond, 3)
          : undefined,
      })),
    paced: phases.filter((phase) => phase.paced),
    peakRssMb: memory,
    ...(bare
      ? {
          bare: {
            fulfilmentsPerSecond: bare.fulfilmentsPerSecond,
            cpuMsPerFulfilment: bare.cpuMsPerFulfilment,
          },
          barePhase: bare,
        }
      : {}),
    targets: allTargets(run),
    ...(run.pairs.length > 0 ? { pairs: run.pairs } : {}),
    ...(run.warm
      ? {
          warm: {
            warmUp: run.warm.warmUp,
            bare: {
              fulfilmentsPerSecond: run.warm.bare.fulfilmentsPerSecond,
              cpuMsPerFulfilment: run.warm.bare.cpuMsPerFulfilment,
            },
            runner: run.warm.oneKey,
            barePhase: run.warm.bare,
            cpuRatio: run.warm.pair.cpuRatio,
            rateRatio: run.warm.pair.rateRatio,
          },
        }
      : {}),
    ...blockTimeResults(run.blockTime),
    ...(Object.keys(run.push).length > 0 ? { push: run.push } : {}),
    ...(run.against ? { against: againstResults(run.against) } : {}),
  }
  writeFileSync(file, JSON.stringify(results, null, 2) + '\n')
  return file
}

/** `blockTime`, `rpc` and `redis`, each keyed by the runner's transport (ws, http). */
function blockTimeResults(results: readonly BlockTimeResult[]) {
  if (results.length === 0) return {}
  return {
    blockTime: Object.fromEntries(results.map((result) => [result.transport, result.blockTime])),
    rpc: Object.fromEntries(results.map((result) => [result.transport, result.rpc])),
    redis: Object.fromEntries(results.map((result) => [result.transport, result.redis])),
  }
}

export function allTargets(run: Run) {
  return [
    ...(run.baseline ? targetsOf(run.bare, run.phases) : []),
    ...blockTimeTargets(run.blockTime),
    ...pushTargets(run.push),
  ]
}
