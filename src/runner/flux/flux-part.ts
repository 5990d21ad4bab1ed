import type { JsonRpcApiProvider } from 'ethers'
import type { Redis } from 'ioredis'
import type { Logger } from '../../config/logger.ts'
import type { RunOptions } from '../../pipeline/index.ts'
import type { JobRegistry } from '../job-registry.ts'
import { fluxJobOf, isFluxJob, type FluxJob } from './flux-job.ts'
import { startFluxMonitor, type FluxMonitor, type FluxMonitorOptions } from './monitor.ts'
import { observeFluxValue } from './observe.ts'
import { publishFluxFeeds } from './feeds-record.ts'

export interface FluxPartOptions {
  chainId: number
  provider: JsonRpcApiProvider
  /** The node's sender of this chain: one owner per key, every submission simulated before signing. */
  sender: FluxMonitorOptions['sender']
  /** The chain's jobs, followed at every reload of the jobs folder. */
  registry: JobRegistry
  /** What the runs of requests get too: BRIDGE_<NAME>_URL, limits, isolation, the bridges' reach. */
  runOptions?: Partial<RunOptions>
  log: Logger
  tickMs?: number
  /** Where the feeds' latest answers are written for `feedrunner status`, under `prefix`. */
  records?: { redis: Redis; prefix: string }
}

export interface FluxPart {
  /** The fluxmonitor jobs served now. */
  readonly jobs: readonly FluxJob[]
  stop(): Promise<void>
}

/**
 * The flux monitor of a runner's chain: one loop for every fluxmonitor job of the chain, started with
 * the runner's working half and fed the chain's jobs again at every reload (a job added is
 * monitored from its next look, a job removed is not looked at again). Every runner process of a
 * node runs one; only the process that owns a key of the node looks, and its submissions go
 * through the node's sender under one idempotency key per (aggregator, oracle, round).
 */
export function startFluxPart(options: FluxPartOptions): FluxPart {
  const log = options.log.child({ component: 'flux monitor' })
  let jobs = fluxJobsOf(options.registry)
  const monitor: FluxMonitor = startFluxMonitor({
    chainId: options.chainId,
    provider: options.provider,
    sender: options.sender,
    jobs,
    observe: (job, meta, signal) => observeFluxValue(job, meta, { ...options.runOptions, signal }),
    log,
    tickMs: options.tickMs,
  })
  if (jobs.length > 0) log.info({ jobs: jobs.map(({ spec }) => spec.name) }, 'flux monitor started')
  const unsubscribe = options.registry.onChange(() => {
    const next = fluxJobsOf(options.registry)
    const ids = (list: readonly FluxJob[]) => list.map(({ spec }) => spec.externalJobID).join()
    // Each flux job added, changed or removed was said by the reload already.
    if (ids(next) !== ids(jobs))
      log.info({ jobs: next.map(({ spec }) => spec.name) }, 'flux monitor: its jobs changed')
    monitor.setJobs(next)
    jobs = next
  })
  const records = options.records
  const unpublish = records
    ? publishFluxFeeds(records.redis, records.prefix, options.chainId, () => monitor.feeds())
    : () => undefined
  return {
    get jobs() {
      return jobs
    },
    async stop() {
      unpublish()
      unsubscribe()
      await monitor.stop()
    },
  }
}

/** The registry's fluxmonitor jobs, as the monitor runs them. */
function fluxJobsOf(registry: JobRegistry): FluxJob[] {
  return registry.jobs.flatMap(({ job }) => (isFluxJob(job) ? [fluxJobOf(job)] : []))
}
