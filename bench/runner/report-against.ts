/**
 * What `--against` prints and writes: each runner figure for this checkout and the reference (the
 * median over the pairs), their ratio (this / reference) and the spread of that ratio over the pairs;
 * then issue 53's targets, each a ratio within this run.
 */
import { round } from './measure.ts'
import type { AgainstRun } from './phases/against.ts'
import type { RunnerPhaseResult } from './phases/runner-phase.ts'
import { feedrunnerCpuMs } from './report.ts'
import { table } from './table.ts'

const FIGURES: ReadonlyArray<readonly [string, (phase: RunnerPhaseResult) => number]> = [
  ['fulfilments a second', (phase) => phase.fulfilmentsPerSecond],
  ['latency p50, ms', (phase) => phase.latencyMs.p50],
  ['latency p99, ms', (phase) => phase.latencyMs.p99],
  ['CPU ms a fulfilment: runner + adapter + worker + Redis', feedrunnerCpuMs],
  ['  of which the runner', (phase) => cpu(phase, 'runner')],
  ['  the adapter', (phase) => cpu(phase, 'adapter')],
  ['  the fetch worker', (phase) => cpu(phase, 'worker')],
  ['  Redis', (phase) => cpu(phase, 'redis')],
  ['anvil CPU ms a request', (phase) => cpu(phase, 'anvil')],
  ['Redis commands a request', (phase) => phase.redisCommandsPerRequest],
  ['runner peak RSS, MB', (phase) => phase.runnerPeakRssMb],
]

function cpu(phase: RunnerPhaseResult, name: string): number {
  return phase.cpuMsPerRequest[name] ?? Number.NaN
}

export function median(values: readonly number[]): number {
  const sorted = values.filter((value) => !Number.isNaN(value)).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

export interface AgainstFigure {
  figure: string
  /** Each pair's value, in pair order. */
  this: number[]
  reference: number[]
  thisMedian: number
  referenceMedian: number
  /** thisMedian / referenceMedian. */
  ratio: number
  /** The least and the most of each pair's own ratio. */
  ratioSpread: [number, number]
}

/** Every figure of one plan over the pairs. */
export function figuresOf(run: AgainstRun, planId: string): AgainstFigure[] {
  const phases = run.pairs.map((pair) => pair.phases[planId]).filter((phase) => phase !== undefined)
  return FIGURES.map(([figure, of]) => {
    const mine = phases.map((phase) => of(phase.this))
    const theirs = phases.map((phase) => of(phase.reference))
    const ratios = mine.map((value, index) => value / (theirs[index] as number))
    const finite = ratios.filter((ratio) => Number.isFinite(ratio))
    const digits = figure.startsWith('latency') || figure.includes('MB') ? 0 : 2
    return {
      figure: figure.trim(),
      this: mine.map((value) => round(value, digits)),
      reference: theirs.map((value) => round(value, digits)),
      thisMedian: round(median(mine), digits),
      referenceMedian: round(median(theirs), digits),
      ratio: round(median(mine) / median(theirs), 2),
      ratioSpread: [round(Math.min(...finite), 2), round(Math.max(...finite), 2)],
    }
  })
}

export interface AgainstTarget {
  target: string
  value: number
  met: boolean
}

/** Issue 53's targets, each read from this run (medians over the pairs). */
export function againstTargets(run: AgainstRun): AgainstTarget[] {
  const targets: AgainstTarget[] = []
  const add = (target: string, value: number, met: boolean) =>
    targets.push({ target, value: round(value, 2), met })
  const oneKey = run.plans.find((plan) => plan.keys === 1 && plan.perSecond === undefined)
  const paced = run.plans.find((plan) => plan.perSecond !== undefined)
  const figure = (planId: string, name: string) =>
    figuresOf(run, planId).find((item) => item.figure === name)
  if (oneKey) {
    const rate = figure(oneKey.id, 'fulfilments a second')
    const cpu = figure(oneKey.id, 'CPU ms a fulfilment: runner + adapter + worker + Redis')
    add('one key: rate >= 1.0 x the reference', rate?.ratio ?? Number.NaN, (rate?.ratio ?? 0) >= 1)
    add('CPU a fulfilment <= 1.0 x the reference', cpu?.ratio ?? Number.NaN, (cpu?.ratio ?? 2) <= 1)
    const withBare = run.pairs.filter((pair) => pair.bare && pair.phases[oneKey.id])
    if (withBare.length > 0) {
      const rateRatio = median(
        withBare.map(
          (pair) =>
            (pair.phases[oneKey.id]?.this.fulfilmentsPerSecond ?? Number.NaN) /
            (pair.bare?.fulfilmentsPerSecond ?? Number.NaN),
        ),
      )
      const cpuRatio = median(
        withBare.map(
          (pair) =>
            feedrunnerCpuMs(pair.phases[oneKey.id]!.this) /
            (pair.bare?.cpuMsPerFulfilment ?? Number.NaN),
        ),
      )
      add('one key: rate >= 0.45 x the bare fulfiller', rateRatio, rateRatio >= 0.45)
      add('CPU a fulfilment <= 5 x the bare fulfiller', cpuRatio, cpuRatio <= 5)
    }
  }
  if (paced) {
    const p50 = figure(paced.id, 'latency p50, ms')?.thisMedian ?? Number.NaN
    const p99 = figure(paced.id, 'latency p99, ms')?.thisMedian ?? Number.NaN
    add(`paced at ${paced.perSecond}/s: p50 <= 100 ms`, p50, p50 <= 100)
    add(`paced at ${paced.perSecond}/s: p99 <= 400 ms`, p99, p99 <= 400)
  }
  const mine = run.pairs.flatMap((pair) => Object.values(pair.phases).map((phase) => phase.this))
  const peak = Math.max(...mine.map((phase) => phase.runnerPeakRssMb))
  add('runner peak RSS <= 200 MB, every phase', peak, peak <= 200)
  const commands = Math.max(...mine.map((phase) => phase.redisCommandsPerRequest))
  add('Redis commands a request <= 80, every phase', commands, commands <= 80)
  const both = run.pairs.flatMap((pair) =>
    Object.values(pair.phases).flatMap((phase) => [phase.this, phase.reference]),
  )
  const once = both.every((phase) => phase.exactlyOnce && phase.fulfilled === phase.requests)
  add('exactly once, every phase of both sides', once ? 1 : 0, once)
  return targets
}

export function printAgainst(run: AgainstRun): void {
  console.log(
    `\nthis checkout (${run.thisCommit}) against ${run.ref} (${run.commit}): the median of ${run.pairs.length} alternating pairs (orders: ${run.pairs.map((pair) => pair.first).join(', ')} first); ratio = this / reference; spread = the least and most of each pair's own ratio`,
  )
  for (const plan of run.plans) {
    console.log(`\n${plan.label}`)
    const rows = figuresOf(run, plan.id).map((item) => [
      item.figure,
      String(item.thisMedian),
      String(item.referenceMedian),
      `${item.ratio} x`,
      `${item.ratioSpread[0]}-${item.ratioSpread[1]}`,
    ])
    console.log(table([['figure', 'this', run.commit, 'ratio', 'spread'], ...rows]))
  }
  const bare = run.pairs.flatMap((pair) => (pair.bare ? [pair.bare] : []))
  if (bare.length > 0)
    console.log(
      `\nbare fulfiller, each pair: ${bare.map((item) => `${item.fulfilmentsPerSecond}/s, ${item.cpuMsPerFulfilment} ms`).join('; ')}`,
    )
  console.log('\ntargets (issue 53), read from this run')
  console.log(
    table([
      ['target', 'value', 'met'],
      ...againstTargets(run).map((target) => [
        target.target,
        String(target.value),
        target.met ? 'yes' : 'NO',
      ]),
    ]),
  )
}

/** The results JSON's `against` key. */
export function againstResults(run: AgainstRun) {
  return {
    ref: run.ref,
    commit: run.commit,
    thisCommit: run.thisCommit,
    pairs: run.pairs.length,
    order: run.pairs.map((pair) => pair.first),
    figures: Object.fromEntries(run.plans.map((plan) => [plan.id, figuresOf(run, plan.id)])),
    bare: run.pairs.flatMap((pair) =>
      pair.bare
        ? [
            {
              pair: pair.pair,
              fulfilmentsPerSecond: pair.bare.fulfilmentsPerSecond,
              cpuMsPerFulfilment: pair.bare.cpuMsPerFulfilment,
            },
          ]
        : [],
    ),
    targets: againstTargets(run),
    phases: run.pairs.map((pair) => ({ pair: pair.pair, first: pair.first, ...pair.phases })),
  }
}
