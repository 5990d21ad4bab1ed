import type { JobType } from 'bullmq'
import { chainLabel, withTimeout, type SharedClock } from './definitions.ts'
import { gauge } from './registry.ts'

/** What the queue gauges read of a queue: a BullMQ Queue, or the requests a runner holds itself. */
export interface CountedQueue {
  getJobCounts(...types: JobType[]): Promise<Record<string, number>>
  getJobs(
    types: JobType[],
    start: number,
    end: number,
    asc: boolean,
  ): Promise<{ timestamp: number }[]>
}

interface QueueSource {
  label: string
  queue: CountedQueue
  /** Redis's clock: jobs are stamped with it (addRequestJob, FetchQueueClient), and aged by it. */
  clock: SharedClock
  chain?: string
}

/**
 * The queues read at scrape time. Kept on globalThis so a module loaded twice in one process (test
 * isolation) still feeds the metrics registered the first time.
 */
const QUEUES_KEY = Symbol.for('feedrunner.metrics.queues')
const holder = globalThis as typeof globalThis & { [QUEUES_KEY]?: Map<object, QueueSource> }
const queues: Map<object, QueueSource> = (holder[QUEUES_KEY] ??= new Map())

/** Reads `queue`'s depths at every scrape under `label` until the returned function is called. */
export function watchQueue(
  label: string,
  queue: CountedQueue,
  clock: SharedClock,
  chain?: string,
): () => void {
  const token = {}
  queues.set(token, { label, queue, clock, chain })
  return () => void queues.delete(token)
}

gauge(
  'feedrunner_queue_jobs',
  "Jobs per queue and state, read from Redis at scrape time; a runner's queues also by chain",
  ['queue', 'state', 'chain'],
  async function collectQueueJobs() {
    this.reset()
    await Promise.all(
      [...queues.values()].map(async ({ label, queue, chain }) => {
        try {
          const counts = await withTimeout(
            queue.getJobCounts(
              'waiting',
              'active',
              'delayed',
              'prioritized',
              'failed',
              'completed',
            ),
          )
          for (const [state, count] of Object.entries(counts))
            this.set({ queue: label, state, ...chainLabel(chain) }, count)
        } catch {
          // Redis is away: no value rather than a stale one (readiness says why).
        }
      }),
    )
  },
)

gauge(
  'feedrunner_queue_oldest_waiting_seconds',
  'Age of the oldest job still waiting in each queue (0 when none waits), read at scrape time',
  ['queue', 'chain'],
  async function collectOldest() {
    this.reset()
    await Promise.all(
      [...queues.values()].map(async ({ label, queue, clock, chain }) => {
        try {
          const [oldest] = await withTimeout(queue.getJobs(['waiting', 'prioritized'], 0, 0, true))
          const now = clock.now() ?? Date.now()
          this.set(
            { queue: label, ...chainLabel(chain) },
            oldest ? Math.max(0, (now - oldest.timestamp) / 1_000) : 0,
          )
        } catch {
          // as above
        }
      }),
    )
  },
)
