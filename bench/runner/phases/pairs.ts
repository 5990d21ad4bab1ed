/**
 * Issue 20's two ratio targets over alternating pairs (BENCH_PAIRS=k): after the phases, k more pairs
 * of the bare fulfiller and the one-key burst, run one after the other on fresh chains, so each ratio
 * compares two phases that ran seconds apart. The machine's speed moves between runs (and within one:
 * the bare fulfiller alone has given 342-711 fulfilments a second with the same code), so a single pair
 * says little; the median over the run's pairs says more.
 */
import { loadavg } from 'node:os'
import type { Context } from '../load.ts'
import { round } from '../measure.ts'
import { feedrunnerCpuMs } from '../report.ts'
import { table } from '../table.ts'
import { N } from '../settings.ts'
import { runBare, type BareResult } from './bare.ts'
import { runRunnerPhase, type RunnerPhaseResult } from './runner-phase.ts'
import { phaseLabel } from './warm-up.ts'

export interface PairResult {
  /** 0: the phases' own bare fulfiller and one-key burst; 1..k: the pairs run after them. */
  pair: number
  bareFulfilmentsPerSecond: number
  oneKeyFulfilmentsPerSecond: number
  /** one key's rate / the bare fulfiller's (target: >= 0.6). */
  rateRatio: number
  bareCpuMsPerFulfilment: number
  feedrunnerCpuMsPerFulfilment: number
  /** feedrunner's CPU / the bare fulfiller's (target: <= 2.5). */
  cpuRatio: number
  exactlyOnce: boolean
}

export function pairOf(pair: number, bare: BareResult, oneKey: RunnerPhaseResult): PairResult {
  const feedrunnerCpu = feedrunnerCpuMs(oneKey)
  return {
    pair,
    bareFulfilmentsPerSecond: bare.fulfilmentsPerSecond,
    oneKeyFulfilmentsPerSecond: oneKey.fulfilmentsPerSecond,
    rateRatio: round(oneKey.fulfilmentsPerSecond / bare.fulfilmentsPerSecond, 2),
    bareCpuMsPerFulfilment: bare.cpuMsPerFulfilment,
    feedrunnerCpuMsPerFulfilment: round(feedrunnerCpu, 2),
    cpuRatio: round(feedrunnerCpu / bare.cpuMsPerFulfilment, 2),
    exactlyOnce: bare.exactlyOnce && oneKey.exactlyOnce,
  }
}

/** Runs `count` pairs after the phases; each pair's one-key burst has its own queue prefix. */
export async function runPairs(ctx: Context, count: number): Promise<PairResult[]> {
  const pairs: PairResult[] = []
  for (let pair = 1; pair <= count; pair++) {
    const bare = await runBare(ctx)
    const oneKey = await runRunnerPhase(ctx, {
      label: `runner, 1 key (pair ${pair})`,
      id: `k1-pair${pair}`,
      keys: 1,
      requests: N,
    })
    const result = pairOf(pair, bare, oneKey)
    pairs.push(result)
    console.log(
      `pair ${pair}: bare ${result.bareFulfilmentsPerSecond}/s and ${result.bareCpuMsPerFulfilment} ms, one key ${result.oneKeyFulfilmentsPerSecond}/s and ${result.feedrunnerCpuMsPerFulfilment} ms: ${result.rateRatio} x the rate, ${result.cpuRatio} x the CPU, load average ${loadavg()[0]?.toFixed(1)}`,
    )
  }
  return pairs
}

/** The bare fulfiller and the one-key burst warm (BENCH_WARMUP, warm-up.ts), side by side. */
export interface WarmPair {
  warmUp: number
  bare: BareResult
  oneKey: RunnerPhaseResult
  pair: PairResult
}

/** The warm pair: each process answers `warmUp` requests before its measured N. */
export async function runWarmPair(ctx: Context, warmUp: number): Promise<WarmPair> {
  const bare = await runBare(ctx, warmUp)
  const oneKey = await runRunnerPhase(ctx, {
    label: phaseLabel('runner, 1 key', warmUp),
    id: 'k1-warm',
    keys: 1,
    requests: N,
    warmUp,
  })
  const pair = pairOf(0, bare, oneKey)
  console.log(
    `warm, after ${warmUp} requests: bare ${pair.bareFulfilmentsPerSecond}/s and ${pair.bareCpuMsPerFulfilment} ms, one key ${pair.oneKeyFulfilmentsPerSecond}/s and ${pair.feedrunnerCpuMsPerFulfilment} ms: ${pair.rateRatio} x the rate, ${pair.cpuRatio} x the CPU, load average ${loadavg()[0]?.toFixed(1)}`,
  )
  return { warmUp, bare, oneKey, pair }
}

/**
 * Cold (each process fresh, the phases above) against warm (each process after a burst of its own):
 * every process's CPU a fulfilment, and the ratio to the bare fulfiller's.
 */
export function printWarm(cold: PairResult, cold1: RunnerPhaseResult, warm: WarmPair): void {
  console.log(
    `\ncold and warm (BENCH_WARMUP: each process answered ${warm.warmUp} requests before the measured ${N}), CPU ms a fulfilment`,
  )
  const processes = ['runner', 'adapter', 'worker', 'redis'] as const
  const row = (label: string, pair: PairResult, phase: RunnerPhaseResult) => [
    label,
    String(pair.bareCpuMsPerFulfilment),
    ...processes.map((name) => String(phase.cpuMsPerRequest[name] ?? '-')),
    String(pair.feedrunnerCpuMsPerFulfilment),
    `${pair.cpuRatio} x`,
    `${pair.rateRatio} x`,
  ]
  console.log(
    table([
      ['', 'bare fulfiller', ...processes, 'feedrunner', 'CPU ratio', 'rate ratio'],
      row('cold', cold, cold1),
      row('warm', warm.pair, warm.oneKey),
    ]),
  )
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** Each pair's ratios, then their medians and how many pairs met each target. */
export function printPairs(pairs: readonly PairResult[]): void {
  console.log(
    '\nthe two ratio targets over alternating pairs (BENCH_PAIRS; pair 0 is the phases above)',
  )
  const rows = pairs.map((pair) => [
    String(pair.pair),
    `${pair.bareFulfilmentsPerSecond}/s, ${pair.bareCpuMsPerFulfilment} ms`,
    `${pair.oneKeyFulfilmentsPerSecond}/s, ${pair.feedrunnerCpuMsPerFulfilment} ms`,
    String(pair.rateRatio),
    String(pair.cpuRatio),
    pair.exactlyOnce ? 'yes' : 'NO',
  ])
  const met = (ok: (pair: PairResult) => boolean) =>
    `${pairs.filter(ok).length} of ${pairs.length} met`
  console.log(
    table([
      [
        'pair',
        'bare fulfiller',
        'one key (feedrunner CPU)',
        'rate ratio',
        'CPU ratio',
        'exactly once',
      ],
      ...rows,
      [
        'median',
        '',
        '',
        String(round(median(pairs.map((pair) => pair.rateRatio)), 2)),
        String(round(median(pairs.map((pair) => pair.cpuRatio)), 2)),
        '',
      ],
      ['targets', '', '', '>= 0.6', '<= 2.5', ''],
      [
        '',
        '',
        '',
        met((pair) => pair.rateRatio >= 0.6),
        met((pair) => pair.cpuRatio <= 2.5),
        met((pair) => pair.exactlyOnce),
      ],
    ]),
  )
}
