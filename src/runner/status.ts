import { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import { FEED_FAMILIES } from '../config/settings.ts'
import { fetchQueueName } from '../queue/names.ts'
import { scanKeys } from '../queue/scan-keys.ts'
import { REQUESTS_QUEUE } from './requests-queue.ts'
import { RunStore, type RunRecord } from './run-record.ts'
import { readLoadedJobs, type LoadedJobs } from './loaded-jobs.ts'

export interface QueueDepth {
  queue: string
  waiting: number
  active: number
  delayed: number
  failed: number
  completed: number
}

export interface StatusReport {
  queues: QueueDepth[]
  runs: RunRecord[]
  /** What the running runners serve, per chain (none when no runner runs on this prefix). */
  served?: Array<{ chainId: number } & LoadedJobs>
}

/**
 * Every queue feedrunner uses under `prefix`: fetch, and each chain's `requests-<chain id>`, found by
 * their keys on every master of a Redis Cluster.
 */
export async function queueNames(redis: Redis, prefix: string): Promise<string[]> {
  const names = new Set<string>(FEED_FAMILIES.map(fetchQueueName))
  for (const pattern of [`${prefix}:${REQUESTS_QUEUE}-*:meta`]) {
    const found = (await scanKeys(redis, pattern)).map((key) =>
      key.slice(prefix.length + 1, -':meta'.length),
    )
    for (const name of found.sort()) names.add(name)
  }
  return [...names]
}

/** Queue depths and the latest runs, as `feedrunner status` shows them. */
export async function readStatus(
  redis: Redis,
  prefix: string,
  runLimit = 20,
): Promise<StatusReport> {
  const queues: QueueDepth[] = []
  for (const name of await queueNames(redis, prefix)) {
    const queue = new Queue(name, { connection: redis, prefix })
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')
    queues.push({
      queue: name,
      waiting: counts.waiting ?? 0,
      active: counts.active ?? 0,
      delayed: counts.delayed ?? 0,
      failed: counts.failed ?? 0,
      completed: counts.completed ?? 0,
    })
  }
  const runs = await new RunStore(redis, `${prefix}:runner`).recent(runLimit)
  const served: NonNullable<StatusReport['served']> = []
  const queuePrefix = `${REQUESTS_QUEUE}-`
  for (const { queue } of queues) {
    if (!queue.startsWith(queuePrefix) || queue.endsWith('-held')) continue
    const chainId = Number(queue.slice(queuePrefix.length))
    const entry = await readLoadedJobs(redis, prefix, chainId)
    if (entry) served.push({ chainId, ...entry })
  }
  return { queues, runs, served }
}
