import type { Redis } from 'ioredis'
import { FEED_FAMILIES } from '../config/settings.ts'
import { fetchQueueName, REQUESTS_QUEUE } from '../queue/names.ts'
import { scanKeys } from '../queue/scan-keys.ts'
import { RunStore, type RunRecord } from './run-record.ts'
import { readLoadedJobs, type LoadedJobs } from './loaded-jobs.ts'
import { readFluxFeeds, type FluxFeeds } from './flux/feeds-record.ts'

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
  /** The flux feeds each chain's monitor last saw: latest answer and round, next heartbeat. */
  flux?: Array<{ chainId: number } & FluxFeeds['feeds'][number]>
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

/**
 * A queue's depths as BullMQ's getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')
 * answers them, read from its keys (`<prefix>:<queue>:wait` a list, ...): loading BullMQ to count
 * took most of `feedrunner status`'s start (test/runner/status-counts.test.ts holds the two equal).
 * Every key of a queue shares its prefix, and so its slot on a Redis Cluster: one pipeline.
 */
export async function queueDepth(redis: Redis, prefix: string, queue: string): Promise<QueueDepth> {
  const key = (state: string) => `${prefix}:${queue}:${state}`
  const answers = await redis
    .pipeline()
    .llen(key('wait'))
    .llen(key('active'))
    .zcard(key('delayed'))
    .zcard(key('failed'))
    .zcard(key('completed'))
    .exec()
  const [waiting, active, delayed, failed, completed] = (answers ?? []).map(([error, count]) => {
    if (error) throw error
    return Number(count)
  })
  return {
    queue,
    waiting: waiting ?? 0,
    active: active ?? 0,
    delayed: delayed ?? 0,
    failed: failed ?? 0,
    completed: completed ?? 0,
  }
}

/** Queue depths and the latest runs, as `feedrunner status` shows them. */
export async function readStatus(
  redis: Redis,
  prefix: string,
  runLimit = 20,
): Promise<StatusReport> {
  const queues: QueueDepth[] = []
  for (const name of await queueNames(redis, prefix))
    queues.push(await queueDepth(redis, prefix, name))
  const runs = await new RunStore(redis, `${prefix}:runner`).recent(runLimit)
  const served: NonNullable<StatusReport['served']> = []
  const flux: NonNullable<StatusReport['flux']> = []
  const queuePrefix = `${REQUESTS_QUEUE}-`
  for (const { queue } of queues) {
    if (!queue.startsWith(queuePrefix) || queue.endsWith('-held')) continue
    const chainId = Number(queue.slice(queuePrefix.length))
    const entry = await readLoadedJobs(redis, prefix, chainId)
    if (entry) served.push({ chainId, ...entry })
    const feeds = await readFluxFeeds(redis, prefix, chainId)
    for (const feed of feeds?.feeds ?? []) flux.push({ chainId, ...feed })
  }
  return { queues, runs, served, flux }
}
