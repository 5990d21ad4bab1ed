/**
 * What the bench prints (a table per view, then issue 20's targets as ratios of this run's own figures)
 * and the results JSON it writes to bench/results/.
 */
import { cpus } from 'node:os'
import { round } from './measure.ts'
import { N, PACED_RATE } from './settings.ts'
import type { BareResult } from './phases/bare.ts'
import type { BaselineResult } from './phases/baseline.ts'
import { printAnvilBlocks, printRpcCalls } from './report-chain.ts'
import { table } from './table.ts'
import type { RunnerPhaseResult } from './phases/runner-phase.ts'

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

function phaseRows(
  baseline: BaselineResult,
  bare: BareResult | undefined,
  phases: readonly RunnerPhaseResult[],
): string[][] {
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
  const chainColumns = (phase: BareResult | RunnerPhaseResult) => [
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
  if (bare)
    rows.push([
      'bare fulfiller (1 key, no Redis)',
      ...chainColumns(bare),
      '-',
      String(bare.blocks),
      `${bare.blockKinds.withRequests} / ${bare.blockKinds.withFulfilments} / ${bare.blockKinds.withNeither}`,
      ...['-', '-'],
    ])
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
  bare: BareResult | undefined,
  phases: RunnerPhaseResult[],
  memory: Record<string, number>,
): void {
  console.log('\n' + table(phaseRows(baseline, bare, phases)))
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
    `\nCPU ms per request, by process (baseline: anvil ${baseline.anvilCpuMsPerTx} ms per fulfilment${bare ? `; bare fulfiller: ${bare.cpuMsPerFulfilment} ms its own, anvil ${bare.anvilCpuMsPerRequest} ms` : ''})`,
  )
  console.log(byProcess(phases, (phase) => phase.cpuMsPerRequest))
  console.log(
    `\nread and write system calls per request, by process (/proc/<pid>/io${bare ? `; bare fulfiller: ${bare.syscallsPerFulfilment} its own` : ''})`,
  )
  console.log(byProcess(phases, (phase) => phase.syscallsPerRequest))
  printAnvilBlocks(bare, phases)
  const oneKey = oneKeyBurst(phases)
  if (oneKey) console.log(`\n${halfBaselineBudget(baseline, oneKey)}`)
  printRedisCommands(phases)
  printRpcCalls(bare, phases)
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

/**
 * Redis commands per request of each phase by command name (the 14 most), and by what sent them when
 * BENCH_REDIS_SOURCES=1 had a MONITOR count them.
 */
function printRedisCommands(phases: readonly RunnerPhaseResult[]): void {
  const view = (
    title: string,
    of: (phase: RunnerPhaseResult) => Record<string, number> | undefined,
    most: number,
  ) => {
    const totals = new Map<string, number>()
    for (const phase of phases)
      for (const [name, value] of Object.entries(of(phase) ?? {}))
        totals.set(name, (totals.get(name) ?? 0) + value)
    if (totals.size === 0) return
    const names = [...totals]
      .sort((a, b) => b[1] - a[1])
      .slice(0, most)
      .map(([name]) => name)
    console.log(`\n${title}`)
    console.log(
      table([
        ['', ...phases.map((phase) => phase.label)],
        ...names.map((name) => [name, ...phases.map((phase) => String(of(phase)?.[name] ?? '-'))]),
      ]),
    )
  }
  view(
    'Redis commands per request by what sent them (BENCH_REDIS_SOURCES=1: MONITOR; a script and the commands it runs)',
    (phase) => phase.redisCommands.bySource,
    20,
  )
  view(
    'Redis bytes sent per request by what sent them (BENCH_REDIS_SOURCES=1: the arguments of each command a client sent)',
    (phase) => phase.redisCommands.bytesBySource,
    20,
  )
  view(
    'Redis commands per request by command (INFO commandstats; commands run by scripts included; the 14 most)',
    (phase) => phase.redisCommands.byCommand,
    14,
  )
}

/** The one-key burst among the phases: the phase issue 20's ratio targets compare with the bare fulfiller. */
export function oneKeyBurst(phases: readonly RunnerPhaseResult[]): RunnerPhaseResult | undefined {
  return phases.find((phase) => !phase.paced && phase.keys === 1)
}

/** The feedrunner processes whose CPU counts against the bare fulfiller's (the feed service and anvil are shared). */
const FEEDRUNNER_PROCESSES = ['runner', 'adapter', 'worker', 'redis'] as const

/** feedrunner's CPU per fulfilment in a phase: its runner, adapter, fetch worker and Redis together. */
export function feedrunnerCpuMs(phase: RunnerPhaseResult): number {
  return FEEDRUNNER_PROCESSES.reduce(
    (sum, name) => sum + (phase.cpuMsPerRequest[name] ?? Number.NaN),
    0,
  )
}

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

export interface Target {
  target: string
  /** The figures the value is made of. */
  figures: string
  /** The value compared with the limit (a ratio of two figures of this run, or a figure); undefined = not measured. */
  value: number | undefined
  /** The limit, e.g. `>= 0.6` or `<= 40`. */
  limit: string
  /** value / limit: below 1 is inside an "at most" limit, above 1 inside an "at least" one. */
  ofLimit: number | undefined
  met: boolean | undefined
}

export function target(
  name: string,
  value: number | undefined,
  limit: number,
  atMost: boolean,
  figures: string,
): Target {
  const measured = value !== undefined && !Number.isNaN(value)
  return {
    target: name,
    figures,
    value: measured ? round(value, 2) : undefined,
    limit: `${atMost ? '<=' : '>='} ${limit}`,
    ofLimit: measured ? round(value / limit, 2) : undefined,
    met: measured ? (atMost ? value <= limit : value >= limit) : undefined,
  }
}

/** Issue 20's targets, each from this run's own figures. */
export function targetsOf(
  bare: BareResult | undefined,
  phases: readonly RunnerPhaseResult[],
): Target[] {
  const oneKey = oneKeyBurst(phases)
  const paced = phases.find((phase) => phase.paced)
  const feedrunnerCpu = oneKey ? feedrunnerCpuMs(oneKey) : undefined
  const worstCommands = Math.max(...phases.map((phase) => phase.redisCommandsPerRequest))
  const worstRss = Math.max(...phases.map((phase) => phase.runnerPeakRssMb))
  const pacedAt = paced
    ? ` (paced at ${PACED_RATE}/s${PACED_RATE === 50 ? '' : '; the target is for 50/s'})`
    : ''
  const allOnce = [...(bare ? [bare] : []), ...phases].every((phase) => phase.exactlyOnce)
  return [
    target(
      'one key >= 0.6 x bare rate',
      oneKey && bare ? oneKey.fulfilmentsPerSecond / bare.fulfilmentsPerSecond : undefined,
      0.6,
      false,
      `one key ${oneKey?.fulfilmentsPerSecond}/s / bare ${bare?.fulfilmentsPerSecond}/s`,
    ),
    target(
      'CPU per fulfilment (runner+adapter+worker+Redis) <= 2.5 x bare',
      feedrunnerCpu !== undefined && bare ? feedrunnerCpu / bare.cpuMsPerFulfilment : undefined,
      2.5,
      true,
      `${round(feedrunnerCpu ?? Number.NaN, 2)} ms / bare ${bare?.cpuMsPerFulfilment} ms`,
    ),
    target(
      '<= 80 Redis commands per request',
      phases.length > 0 ? worstCommands : undefined,
      80,
      true,
      `most of any phase`,
    ),
    {
      target: 'exactly once in every phase',
      figures: `${[...(bare ? [bare] : []), ...phases].filter((phase) => phase.exactlyOnce).length} of ${phases.length + (bare ? 1 : 0)} phases`,
      value: undefined,
      limit: 'every phase',
      ofLimit: undefined,
      met: allOnce,
    },
    target(
      'runner peak RSS <= 200 MB',
      phases.length > 0 ? worstRss : undefined,
      200,
      true,
      'MB, most of any phase',
    ),
    target('paced p50 <= 100 ms', paced?.latencyMs.p50, 100, true, `p50 ms${pacedAt}`),
    target('paced p99 <= 400 ms', paced?.latencyMs.p99, 400, true, `p99 ms${pacedAt}`),
  ]
}

export function printTargets(targets: readonly Target[]): void {
  console.log(
    "\nissue 20's and issue 40's targets (ratios from this run; the machine is shared, compare over runs)",
  )
  console.log(
    table([
      ['target', 'from', 'value', 'limit', 'value / limit', 'met'],
      ...targets.map((item) => [
        item.target,
        item.figures,
        item.value === undefined ? '-' : String(item.value),
        item.limit,
        item.ofLimit === undefined ? '-' : String(item.ofLimit),
        item.met === undefined ? 'not measured' : item.met ? 'met' : 'NOT met',
      ]),
    ]),
  )
}

/** A table of one figure per request for each process (columns) in each phase (rows). */
function byProcess(
  phases: readonly RunnerPhaseResult[],
  figures: (phase: RunnerPhaseResult) => Record<string, number>,
): string {
  const processNames = phases[0] ? Object.keys(figures(phases[0])) : []
  return table([
    ['', ...processNames],
    ...phases.map((phase) => [
      phase.label,
      ...processNames.map((name) => String(figures(phase)[name])),
    ]),
  ])
}
