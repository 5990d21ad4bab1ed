import type { Redis } from 'ioredis'
import type { FeedFamily, Settings } from '../config/settings.ts'
import { familyCacheTtlMs } from '../config/settings.ts'
import { createFetchQueue, type FetchQueue } from './factories.ts'

/** Jobs one sweep removes from one family and state at most (the next sweep takes the rest). */
const SWEEP_LIMIT = 1_000

/**
 * Removes old finished fetch jobs, so that they are kept by count and age and not for ever: BullMQ
 * applies a job's removeOnFail/removeOnComplete age only when another job of the queue finishes, so
 * 3,000 requests that failed and nothing after them stayed in Redis as long as Redis did.
 * Failed jobs go after FETCH_FAILED_JOBS_KEPT_SECONDS, completed ones after their family's cache TTL
 * (past it no request joins them). Every half of the failed jobs' age, at most every minute.
 * `connection` is a `client` connection; it stays the caller's. `watch` takes each queue's errors
 * (Connections.watch: a Redis outage is reported as state changes, never thrown or printed).
 */
export function sweepFetchJobs(
  settings: Settings,
  families: readonly FeedFamily[],
  connection: Redis,
  watch: (queue: FetchQueue, name: string) => FetchQueue,
): { stop(): Promise<void> } {
  const queues = new Map(
    families.map((family) => [
      family,
      watch(createFetchQueue(settings, family, connection), `fetch job sweep ${family}`),
    ]),
  )
  const keptMs = settings.FETCH_FAILED_JOBS_KEPT_SECONDS * 1_000
  const everyMs = Math.min(60_000, Math.max(1_000, keptMs / 2))
  let running: Promise<void> | undefined
  const sweep = async () => {
    for (const [family, queue] of queues) {
      await queue.clean(keptMs, SWEEP_LIMIT, 'failed')
      await queue.clean(familyCacheTtlMs(settings, family), SWEEP_LIMIT, 'completed')
    }
  }
  const timer = setInterval(() => {
    // Redis away: the next sweep tries again (its outage is reported where the connection is watched).
    running ??= sweep()
      .catch(() => undefined)
      .finally(() => (running = undefined))
  }, everyMs)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await running
      await Promise.allSettled([...queues.values()].map((queue) => queue.close()))
    },
  }
}
