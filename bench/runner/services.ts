/**
 * What the runner phases of one side stand on: its Redis, its feed service, adapter and fetch worker,
 * each a process of its own, started once and kept across the side's phases.
 */
import { Redis } from 'ioredis'
import { allFamilyUrls } from '../../src/config/settings.ts'
import { FEEDRUNNER_BIN } from '../../src/dev/feedrunner-process.ts'
import { freePort } from '../../src/dev/ports.ts'
import { redisAnswers, startPrivateRedis } from '../../src/dev/redis.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { startPart, type Context } from './load.ts'
import { RedisSourceTap } from './redis-commands.ts'
import type { Side } from './reference.ts'
import { JOB_NAME, LOG_LEVEL, REDIS_SOURCES } from './settings.ts'

export type Cleanups = Array<() => Promise<void>>

/** Redis for the run: a private redis-server by default (no other load on it, its command counts ours alone). */
async function openRedis(cleanups: Cleanups): Promise<{ redis: Redis; url: string; pid?: number }> {
  let url = process.env.BENCH_REDIS_URL ?? ''
  // Its CPU per request is counted with the other processes' (a Redis given by URL is not ours to measure).
  let pid: number | undefined
  if (!url || !(await redisAnswers(url))) {
    const privateRedis = await startPrivateRedis()
    cleanups.push(() => privateRedis.stop())
    url = privateRedis.url
    pid = privateRedis.process.pid
  }
  return { redis: new Redis(url, { maxRetriesPerRequest: null }), url, pid }
}

/** Removes this run's keys (its own prefix alone) and closes the bench's Redis connection. */
function removeKeysOnCleanup(cleanups: Cleanups, redis: Redis, prefix: string): void {
  cleanups.push(async () => {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await redis.unlink(...keys)
    } while (cursor !== '0')
    redis.disconnect()
  })
}

/** The job every request phase asks for, and the confirmations its requests wait for. */
async function benchJob(side: Side): Promise<{ externalJobId: string; confirmations: number }> {
  // The job specs name the chain id, which every fresh anvil shares (31337).
  const job = (await loadJobRegistry(side.jobsDir, 31337)).byName(JOB_NAME)
  if (!job) throw new Error(`no job named "${JOB_NAME}" in ${side.jobsDir}`)
  const spec = job.job.spec
  return {
    externalJobId: job.externalJobId,
    confirmations: Math.max(
      1,
      (spec.type === 'directrequest' ? spec.minIncomingConfirmations : 1) ?? 1,
    ),
  }
}

type Named = (part: string) => string

/**
 * The feed service in its own process: this process is only the load generator. Game odds come from
 * its data set, so it needs no chain (--chain is for the blockchain family).
 */
async function startFeedService(cleanups: Cleanups, side: Side, named: Named) {
  const key = `bench-${Date.now()}`
  const port = await freePort()
  const feeds = await startPart(
    named('feed service'),
    ['feeds', 'serve', '--port', String(port)],
    { FEEDS_SERVER_KEYS: key, LOG_LEVEL },
    /feed service listening/,
    side.bin,
  )
  cleanups.push(() => feeds.stop())
  return { key, url: `http://127.0.0.1:${port}`, pid: feeds.child.pid! }
}

/** What every feedrunner process of the side is started with (a phase adds its own). */
async function baseEnvOf(
  redisUrl: string,
  prefix: string,
  side: Side,
  feeds: { key: string; url: string },
): Promise<Record<string, string>> {
  const adapterPort = await freePort()
  return {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    ...allFamilyUrls(feeds.url),
    FEED_API_KEY: feeds.key,
    EA_PORT: String(adapterPort),
    METRICS_PORT: String(await freePort()),
    JOBS_DIR: side.jobsDir,
    CHAIN_POLL_INTERVAL_MS: process.env.CHAIN_POLL_INTERVAL_MS ?? '100',
    BRIDGE_DATAFEED_URL: `http://127.0.0.1:${adapterPort}`,
    LOG_LEVEL,
    // One consumer makes every request of a phase: the per-requester bounds would refuse them.
    REQUESTER_MAX_CONCURRENT_RUNS: '0',
    REQUESTER_MAX_REQUESTS_PER_MINUTE: '0',
  }
}

/** The adapter and a fetch worker, each a process of its own; their pids. */
async function startAdapterAndWorker(
  cleanups: Cleanups,
  side: Side,
  named: Named,
  baseEnv: Record<string, string>,
) {
  const adapter = await startPart(
    named('adapter'),
    ['adapter'],
    { ...baseEnv, OPERATIONS_PORT: String(await freePort()) },
    /adapter listening/,
    side.bin,
  )
  cleanups.push(() => adapter.stop())
  const worker = await startPart(
    named('worker'),
    ['worker'],
    {
      ...baseEnv,
      METRICS_PORT: String(await freePort()),
      OPERATIONS_PORT: String(await freePort()),
    },
    /fetch workers running/,
    side.bin,
  )
  cleanups.push(() => worker.stop())
  return {
    pids: { adapter: adapter.child.pid!, worker: worker.child.pid! },
  }
}

/**
 * Redis, the feed service, the adapter and the fetch worker of one side (this checkout, or the
 * `--against` reference: each its own processes and its own Redis): what its runner phases share.
 */
export async function startServices(cleanups: Cleanups, side: Side): Promise<Context> {
  // The reference's processes are named for it: BENCH_PROFILE and BENCH_PERF pick parts by name.
  const named = (part: string) => (side.bin === FEEDRUNNER_BIN ? part : `${part} [${side.commit}]`)
  const { redis, url: redisUrl, pid: redisPid } = await openRedis(cleanups)
  const redisSources = REDIS_SOURCES ? new RedisSourceTap() : undefined
  if (redisSources) {
    await redisSources.start(redisUrl)
    cleanups.push(async () => redisSources.stop())
  }
  const prefix = `bench-runner-${side.bin === FEEDRUNNER_BIN ? '' : `${side.commit}-`}${Date.now().toString(36)}`
  removeKeysOnCleanup(cleanups, redis, prefix)
  const job = await benchJob(side)
  const feeds = await startFeedService(cleanups, side, named)
  const baseEnv = await baseEnvOf(redisUrl, prefix, side, feeds)
  const { pids } = await startAdapterAndWorker(cleanups, side, named, baseEnv)
  return {
    side,
    artifacts: side.artifacts,
    redis,
    baseEnv,
    ...job,
    prefix,
    pids: {
      ...pids,
      feeds: feeds.pid,
      bench: process.pid,
      ...(redisPid === undefined ? {} : { redis: redisPid }),
    },
    anvilPeakRssMb: [],
    ...(redisSources ? { redisSources } : {}),
  }
}
