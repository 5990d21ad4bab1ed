// The adapter bench's printed report (bench/adapter.ts writes the same figures to results/adapter.json).
import type { FairnessFigures } from './adapter-fairness.ts'

export interface LoadFigures {
  perSecond: number
  p50: number
  p99: number
  errors: number
}

export interface AdapterResults {
  when: string
  machine: { cpus: number; load: number[] }
  settings: { loadSeconds: number; rounds: number; connections: number; coldRequests: number }
  cacheHit: {
    feedrunner: LoadFigures
    baseline: LoadFigures
    throughputRatio: number
    runs: { feedrunner: number[]; baseline: number[] }
  }
  cold: {
    directGet: { p50: number; p99: number }
    adapter: { p50: number; p99: number }
    overheadP50: number
    overheadP99: number
    medianStagesMs: { queued: number | string; inWorker: number | string }
  }
}

export function printAdapterReport(
  results: AdapterResults,
  bench: { CONNECTIONS: number; LOAD_SECONDS: number; ROUNDS: number; COLD_REQUESTS: number },
): void {
  const { CONNECTIONS, LOAD_SECONDS, ROUNDS, COLD_REQUESTS } = bench
  const ms = (value: number) => `${value.toFixed(2)} ms`
  console.log(
    `\nCache hits (${CONNECTIONS} connections, ${LOAD_SECONDS} s, best of ${ROUNDS} runs each)`,
  )
  console.log(
    `  feedrunner adapter      ${results.cacheHit.feedrunner.perSecond.toFixed(0).padStart(7)} req/s   p50 ${ms(results.cacheHit.feedrunner.p50)}   p99 ${ms(results.cacheHit.feedrunner.p99)}   errors ${results.cacheHit.feedrunner.errors}`,
  )
  console.log(
    `  HttpTransport baseline  ${results.cacheHit.baseline.perSecond.toFixed(0).padStart(7)} req/s   p50 ${ms(results.cacheHit.baseline.p50)}   p99 ${ms(results.cacheHit.baseline.p99)}   errors ${results.cacheHit.baseline.errors}`,
  )
  console.log(
    `  every run (req/s): feedrunner ${results.cacheHit.runs.feedrunner.join(', ')}; baseline ${results.cacheHit.runs.baseline.join(', ')}`,
  )
  console.log(
    `  ratio feedrunner/baseline: ${results.cacheHit.throughputRatio.toFixed(2)}x (target >= 0.8x)`,
  )
  console.log(`\nCold requests (${COLD_REQUESTS}, one at a time)`)
  console.log(
    `  direct GET to the feed service   p50 ${ms(results.cold.directGet.p50)}   p99 ${ms(results.cold.directGet.p99)}`,
  )
  console.log(
    `  adapter (queue, worker, feed)    p50 ${ms(results.cold.adapter.p50)}   p99 ${ms(results.cold.adapter.p99)}`,
  )
  console.log(
    `  added by the adapter: p50 ${ms(results.cold.overheadP50)} (target <= 5 ms), p99 ${ms(results.cold.overheadP99)}`,
  )
  console.log(
    `  where a cold request spends its time (medians, Redis clock): waiting for a worker ${results.cold.medianStagesMs.queued} ms, in the worker (fetch included) ${results.cold.medianStagesMs.inWorker} ms`,
  )
  console.log(
    `\nmachine: ${results.machine.cpus} cpus, load average ${results.machine.load.join(' ')}`,
  )
}

export function printFairness(figures: FairnessFigures): void {
  const ms = (value: number) => `${value.toFixed(1)} ms`
  console.log(
    `\nFairness (another client's ${figures.samples} cold requests, one at a time, from another address; weather limit ${figures.rateLimitPerSecond}/s)`,
  )
  console.log(
    `  alone                              p50 ${ms(figures.alone.p50)}   p99 ${ms(figures.alone.p99)}`,
  )
  console.log(
    `  during a flood of ${String(figures.flood).padEnd(4)} from one client  p50 ${ms(figures.flooded.p50)}   p99 ${ms(figures.flooded.p99)}   (the flood answered ${figures.floodAnswered}, ${Math.round(figures.floodPerSecond)} a second while the other was measured, ${figures.floodErrors} not 200)`,
  )
  console.log(`  p50 flooded / alone: ${figures.ratio.toFixed(2)}x (target <= 3x)`)
  console.log('  where the fetches spent their time (medians, Redis clock):')
  for (const [group, stages] of Object.entries(figures.stages))
    console.log(
      `    ${group.padEnd(14)} ${String(stages.jobs).padStart(5)} jobs   waiting for a worker ${stages.queued} ms   in the worker (fetch included) ${stages.inWorker} ms`,
    )
}
