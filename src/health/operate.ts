import { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import {
  observeWaits,
  watchListener,
  watchQueue,
  watchEndpoints,
  watchSender,
  type EndpointSource,
  type KeyStatsLike,
  type SharedClock,
} from '../metrics/index.ts'
import {
  chainCheck,
  redisCheck,
  workersCheck,
  type ChainEndpointsView,
  type WorkerLike,
} from './checks.ts'
import { processHealth, type Health } from './health.ts'

/**
 * What each running part hands to operations: health checks in the process's Health and scrape-time
 * metric sources. The parts are seen structurally (this folder sits below adapter, queue and runner).
 * Each function returns the closer that takes everything back out.
 */

type Closer = () => Promise<void>

/** A BullMQ worker as operations use it: health, and the `active` event for queue waiting times. */
export interface OperatedWorker extends WorkerLike {
  on(event: 'active', listener: (job: { timestamp: number; processedOn?: number }) => void): unknown
}

export interface RunnerParts {
  requestsQueue: Queue
  /** The `requests` queue's pipeline worker (absent in a listen-only process). */
  worker?: OperatedWorker
  sender?: {
    stats(): readonly KeyStatsLike[]
    balances(): Promise<readonly bigint[]>
  }
  listener?: {
    readonly checkpoint: number | undefined
    readonly stats: { readonly pending: number }
  }
}

export interface RunnerEnvironment {
  redisUrl: string
  /** The runner's chain: its id (the `chain` label of its metrics) and its endpoint pool. */
  chain: {
    chainId: number
    pool: ChainEndpointsView & {
      readonly endpoints: readonly EndpointSource[]
      head(): Promise<number>
    }
  }
  prefix: string
  /** A connection for the readiness check (the caller's; not closed here). */
  connection: Redis
  /** Redis's clock, which the queue waits are measured by. */
  clock: SharedClock
  health?: Health
}

/**
 * Operations of the runner: readiness needs Redis, the RPC node and the pipeline worker; the metrics
 * read the requests queue, the sender's per-key counters, nonces and ownership (labelled by key
 * index, never by address), and the listener's lag behind the head.
 */
export function operateRunner(parts: RunnerParts, environment: RunnerEnvironment): Closer {
  const health = environment.health ?? processHealth
  const closers: Array<() => unknown> = []
  closers.push(
    health.add(redisCheck(environment.connection)),
    health.add(chainCheck(environment.chain.chainId, environment.chain.pool)),
    watchEndpoints(environment.chain.chainId, environment.chain.pool.endpoints),
  )
  const chain = String(environment.chain.chainId)
  // Labelled `requests` and the chain (the queue itself is `requests-<chain id>`).
  closers.push(watchQueue('requests', parts.requestsQueue, environment.clock, chain))
  const { worker, sender, listener } = parts
  if (worker) {
    closers.push(health.add(workersCheck(`pipeline-worker-${chain}`, () => [worker])))
    observeWaits(worker, 'requests', environment.clock, chain)
  }
  if (sender) {
    closers.push(
      watchSender(
        () => sender.stats(),
        () => sender.balances(),
        chain,
      ),
    )
  }
  if (listener) {
    closers.push(
      watchListener({
        chain,
        checkpoint: () => listener.checkpoint,
        pending: () => listener.stats.pending,
        head: () => environment.chain.pool.head(),
      }),
    )
  }
  return closeAll(closers)
}

/** Operations of a process's fetch workers: readiness needs Redis and the workers; waiting times per queue. */
export function operateFetchWorkers(
  workers: readonly OperatedWorker[],
  redis: Redis,
  clock: SharedClock,
  health: Health = processHealth,
): Closer {
  const closers: Array<() => unknown> = [
    health.add(redisCheck(redis)),
    health.add(workersCheck('fetch-workers', () => workers)),
  ]
  for (const worker of workers) observeWaits(worker, worker.name, clock)
  return closeAll(closers)
}

/** Operations of the adapter: readiness needs Redis; the metrics read the depths of the fetch queues. */
export function operateAdapter(
  fetchQueues: readonly Queue[],
  redis: Redis,
  clock: SharedClock,
  health: Health = processHealth,
): Closer {
  const closers: Array<() => unknown> = [health.add(redisCheck(redis))]
  for (const queue of fetchQueues) closers.push(watchQueue(queue.name, queue, clock))
  return closeAll(closers)
}

function closeAll(closers: Array<() => unknown>): Closer {
  let closed = false
  return async () => {
    if (closed) return
    closed = true
    await Promise.allSettled(closers.reverse().map(async (close) => close()))
  }
}
