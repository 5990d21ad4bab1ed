/** What the bench prints: a table per view. */
import { cpus } from 'node:os'
import { round } from './measure.ts'
import { N } from './settings.ts'
import type { BaselineResult } from './phases/baseline.ts'
import type { RunnerPhaseResult } from './phases/runner-phase.ts'

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? '').length)),
  )
  return rows
    .map((row) => row.map((cell, column) => cell.padEnd(widths[column] as number)).join('  '))
    .join('\n')
}

const PHASE_COLUMNS = [
  '',
  'fulfilled',
  'fulfil/s',
  'vs baseline',
  'p50 ms',
  'p95 ms',
  'p99 ms',
  'requests/s',
  'max in flight',
  'exactly once',
  'Redis cmds/req',
  'blocks',
  'with req / ful / neither',
  'bumps',
  'anvil flushes',
]

function phaseRows(baseline: BaselineResult, phases: readonly RunnerPhaseResult[]): string[][] {
  const rows: string[][] = [PHASE_COLUMNS]
  rows.push([
    `baseline (pre-signed, 1 key, batches of ${baseline.window})`,
    `${baseline.allMined ? N : '<' + N}`,
    String(baseline.perSecond),
    '1',
    ...['-', '-', '-', '-'],
    String(baseline.window),
    ...['-', '-'],
    String(baseline.blocks),
    ...['-', '-'],
    String(baseline.anvilFlushes),
  ])
  const chainColumns = (phase: RunnerPhaseResult) => [
    `${phase.fulfilled}/${phase.requests}`,
    String(phase.fulfilmentsPerSecond),
    String(round(phase.fulfilmentsPerSecond / baseline.perSecond, 2)),
    String(phase.latencyMs.p50),
    String(phase.latencyMs.p95),
    String(phase.latencyMs.p99),
    String(phase.requestsPerSecond),
    String(phase.maxInFlight),
    phase.exactlyOnce ? 'yes' : 'NO',
  ]
  for (const phase of phases) {
    const columns = chainColumns(phase)
    if (phase.paced) columns[2] = '-'
    rows.push([
      phase.label,
      ...columns,
      String(phase.redisCommandsPerRequest),
      String(phase.blocks),
      `${phase.blockKinds.withRequests} / ${phase.blockKinds.withFulfilments} / ${phase.blockKinds.withNeither}`,
      String(phase.bumps),
      String(phase.anvilFlushes),
    ])
  }
  return rows
}

export function printReport(
  baseline: BaselineResult,
  phases: RunnerPhaseResult[],
  memory: Record<string, number>,
): void {
  console.log('\n' + table(phaseRows(baseline, phases)))
  console.log('\nwhere the time goes (run records, p50 / p95 ms)')
  const stageNames = Object.keys(phases[0]?.stagesMs ?? {})
  console.log(
    table([
      ['', ...stageNames],
      ...phases.map((phase) => [
        phase.label,
        ...stageNames.map((name) => `${phase.stagesMs[name]?.p50} / ${phase.stagesMs[name]?.p95}`),
      ]),
    ]),
  )
  console.log(
    `\nCPU ms per request, by process (baseline: anvil ${baseline.anvilCpuMsPerTx} ms per fulfilment)`,
  )
  const processNames = Object.keys(phases[0]?.cpuMsPerRequest ?? {})
  console.log(
    table([
      ['', ...processNames],
      ...phases.map((phase) => [
        phase.label,
        ...processNames.map((name) => String(phase.cpuMsPerRequest[name])),
      ]),
    ]),
  )
  const oneKey = phases.find((phase) => !phase.paced && phase.keys === 1)
  if (oneKey) console.log(`\n${halfBaselineBudget(baseline, oneKey)}`)
  console.log('\npeak RSS (VmHWM) per process')
  console.log(
    table([['process', 'MB'], ...Object.entries(memory).map(([name, mb]) => [name, String(mb)])]),
  )
  console.log(
    "\nthe runner's V8 heap at its largest (sampled each second: used / reserved / external, MB)",
  )
  console.log(
    table([
      ['', 'used', 'reserved', 'external'],
      ...phases.map((phase) => [
        phase.label,
        String(phase.runnerPeakHeap.usedMb),
        String(phase.runnerPeakHeap.totalMb),
        String(phase.runnerPeakHeap.externalMb),
      ]),
    ]),
  )
}

/** The feedrunner processes whose CPU counts against the bare fulfiller's (the feed service and anvil are shared). */
const FEEDRUNNER_PROCESSES = ['runner', 'adapter', 'worker', 'redis'] as const

/**
 * The CPU a request may cost the whole machine at half the baseline's rate, against what the chain
 * alone takes of it at its cheapest (anvil mining the request in the load generator's batches and the
 * fulfilment in the baseline's), and what the one-key phase spent in the feedrunner processes and Redis.
 */
function halfBaselineBudget(baseline: BaselineResult, oneKey: RunnerPhaseResult): string {
  const cores = cpus().length
  const halfRate = baseline.perSecond / 2
  const budgetMs = (cores * 1_000) / halfRate
  const chainMs = baseline.anvilCpuMsPerRequest + baseline.anvilCpuMsPerTx
  const cpu = oneKey.cpuMsPerRequest
  const feedrunnerMs = [...FEEDRUNNER_PROCESSES, 'feeds'].reduce(
    (sum, name) => sum + (cpu[name] ?? 0),
    0,
  )
  return [
    `half the baseline (${round(halfRate)}/s) leaves ${round(budgetMs, 2)} ms of CPU per request on ${cores} cores, for everything;`,
    `the chain's share at its cheapest: anvil ${baseline.anvilCpuMsPerRequest} ms mining the request + ${baseline.anvilCpuMsPerTx} ms the fulfilment = ${round(chainMs, 2)} ms,`,
    `so ${round(budgetMs - chainMs, 2)} ms are left for the runner, adapter, fetch worker, feed service, Redis and load generator`,
    `(the one-key burst spent ${round(feedrunnerMs, 2)} ms in the feedrunner processes and Redis, ${cpu.runner} ms of it in the runner)`,
  ].join('\n')
}
