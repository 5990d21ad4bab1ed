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
