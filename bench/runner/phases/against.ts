/**
 * `npm run bench -- --against <git-ref>`: this checkout's runner phases alternated with the
 * reference's, in pairs, each phase on a fresh chain (the reference's deployed by the reference's own
 * code), so that both sides of every ratio ran within the same minute on the same machine. The order
 * turns each pair (this, reference; then reference, this; ...), so a machine that slows down over the
 * run weighs on both sides alike. With the bare fulfiller on (BENCH_BARE), each pair also runs it
 * first: the ceiling the targets compare both sides with.
 */
import { loadavg } from 'node:os'
import type { Context } from '../load.ts'
import { feedrunnerCpuMs } from '../report.ts'
import { AGAINST_PAIRS, AGAINST_WARMUP, BARE, step } from '../settings.ts'
import { runBare, type BareResult } from './bare.ts'
import { runRunnerPhase, type PhasePlan, type RunnerPhaseResult } from './runner-phase.ts'
import { phaseLabel } from './warm-up.ts'

export interface AgainstPair {
  pair: number
  /** Which side ran first in this pair. */
  first: 'this' | 'reference'
  bare?: BareResult
  /** By plan id: this checkout's phase and the reference's. */
  phases: Record<string, { this: RunnerPhaseResult; reference: RunnerPhaseResult }>
}

export interface AgainstRun {
  /** The ref as given and the commit it named. */
  ref: string
  commit: string
  /** This checkout's commit. */
  thisCommit: string
  plans: PhasePlan[]
  pairs: AgainstPair[]
}

/** Runs AGAINST_PAIRS pairs of every plan, alternating the sides' order pair by pair. */
export async function runAgainst(
  here: Context,
  there: Context,
  plans: readonly PhasePlan[],
  ref: string,
): Promise<AgainstRun> {
  const pairs: AgainstPair[] = []
  for (let pair = 1; pair <= AGAINST_PAIRS; pair++) {
    const first = pair % 2 === 1 ? 'this' : 'reference'
    const bare = BARE ? await runBare(here) : undefined
    const phases: AgainstPair['phases'] = {}
    for (const plan of plans) {
      const sides =
        first === 'this' ? (['this', 'reference'] as const) : (['reference', 'this'] as const)
      const results: Partial<Record<'this' | 'reference', RunnerPhaseResult>> = {}
      for (const side of sides) {
        const ctx = side === 'this' ? here : there
        step(`pair ${pair} of ${AGAINST_PAIRS}: ${plan.label}, ${ctx.side.name}`)
        const result = await runRunnerPhase(ctx, sidePlan(plan, side, ctx, pair))
        results[side] = result
        console.log(
          `pair ${pair}, ${plan.label}, ${ctx.side.name}: ${result.fulfilled}/${result.requests} fulfilled, ${result.fulfilmentsPerSecond}/s, feedrunner ${feedrunnerCpuMs(result).toFixed(2)} ms CPU a fulfilment (runner ${result.cpuMsPerRequest.runner}), p50 ${result.latencyMs.p50} ms, runner peak ${result.runnerPeakRssMb} MB, load average ${loadavg()[0]?.toFixed(1)}`,
        )
      }
      phases[plan.id] = {
        this: results.this as RunnerPhaseResult,
        reference: results.reference as RunnerPhaseResult,
      }
    }
    pairs.push({ pair, first, ...(bare ? { bare } : {}), phases })
  }
  return { ref, commit: there.side.commit, thisCommit: here.side.commit, plans: [...plans], pairs }
}

/**
 * The plan as one side runs it: its own queue prefix, a label that names the side (BENCH_PROFILE's
 * files and the perf recordings are named by it), and the warm-up of BENCH_AGAINST_WARMUP.
 */
function sidePlan(
  plan: PhasePlan,
  side: 'this' | 'reference',
  ctx: Context,
  pair: number,
): PhasePlan {
  return {
    ...plan,
    // A warm one's ends as warm-up.ts names it: BENCH_PERF then records its measured burst alone.
    label: phaseLabel(
      `${plan.label} [${side === 'this' ? 'this' : ctx.side.commit}]`,
      AGAINST_WARMUP,
    ),
    id: `${plan.id}-${side === 'this' ? 'this' : 'ref'}-${pair}`,
    ...(AGAINST_WARMUP > 0 ? { warmUp: AGAINST_WARMUP } : {}),
  }
}
