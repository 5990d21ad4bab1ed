import { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import {
  observeWaits,
  watchListener,
  watchQueue,
  watchEndpoints,
  watchSender,
  type CountedQueue,
  type EndpointSource,
  type KeyStatsLike,
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
    readonly queueNames: readonly string[]
  }
  listener?: {
    readonly checkpoint: number | undefined
    readonly stats: { readonly pending: number }
  }
  /** The requests this process holds itself, under a lease (absent in a listen-only process). */
  direct?: { stats(): { running: number; waiting: number; oldestWaitingSince?: number } }
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
  /** A connection for the readiness check and the tx queues' depth reads (the caller's; not closed here). */
  connection: Redis
  /** Where the tx queues' errors go (Connections.reportError: an outage is reported, not swallowed). */
  onQueueError: (error: Error) => void
  health?: Health
}

/**
 * Operations of the runner: readiness needs Redis, the RPC node and the pipeline worker; the metrics
 * read the requests queue and every sender key's queue (labelled by key index, never by address),
 * the sender's per-key counters and nonces, and the listener's lag behind the head.
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
  closers.push(watchQueue('requests', parts.requestsQueue, chain))
  const { worker, sender, listener, direct } = parts
  // Next to the queue: the requests this process runs itself (active) or holds for a slot (waiting).
  if (direct) closers.push(watchQueue('requests-held', heldAsQueue(direct), chain))
  if (worker) {
    closers.push(health.add(workersCheck(`pipeline-worker-${chain}`, () => [worker])))
    observeWaits(worker, 'requests', chain)
  }
  if (sender) {
    closers.push(
      watchSender(
        () => sender.stats(),
        () => sender.balances(),
        chain,
      ),
    )
    sender.queueNames.forEach((name, index) => {
      const queue = new Queue(name, {
        connection: environment.connection,
        prefix: environment.prefix,
      })
      // Its connection (the runner's) reports an outage; this one only repeats it.
      queue.on('error', environment.onQueueError)
      closers.push(watchQueue(`tx-key${index}`, queue, chain), () => queue.close())
    })
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

/** A runner's held requests as the queue gauges read a queue. */
function heldAsQueue(direct: NonNullable<RunnerParts['direct']>): CountedQueue {
  return {
    getJobCounts: async () => {
      const { running, waiting } = direct.stats()
      return { active: running, waiting }
    },
    getJobs: async () => {
      const since = direct.stats().oldestWaitingSince
      return since === undefined ? [] : [{ timestamp: since }]
    },
  }
}

/** Operations of a process's fetch workers: readiness needs Redis and the workers; waiting times per queue. */
export function operateFetchWorkers(
  workers: readonly OperatedWorker[],
  redis: Redis,
  health: Health = processHealth,
): Closer {
  const closers: Array<() => unknown> = [
    health.add(redisCheck(redis)),
    health.add(workersCheck('fetch-workers', () => workers)),
  ]
  for (const worker of workers) observeWaits(worker, worker.name)
  return closeAll(closers)
}

/** Operations of the adapter: readiness needs Redis; the metrics read the depths of the fetch queues. */
export function operateAdapter(
  fetchQueues: readonly Queue[],
  redis: Redis,
  health: Health = processHealth,
): Closer {
  const closers: Array<() => unknown> = [health.add(redisCheck(redis))]
  for (const queue of fetchQueues) closers.push(watchQueue(queue.name, queue))
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
