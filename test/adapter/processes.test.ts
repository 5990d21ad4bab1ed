import { readFileSync } from 'node:fs'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFeedrunnerProcess, type FeedrunnerProcess } from '../../src/dev/feedrunner-process.ts'
import { freePort } from '../../src/dev/ports.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { postAdapter, type AdapterAnswer } from './support.ts'

/** Recognisable, so any leak is found by a plain substring search. */
const FEED_API_KEY = 'LEAKCANARY-feed-key-3141592653'

/** Every key under `pattern` with its value, whatever its type, as text. */
async function dumpKeys(redis: Redis, pattern: string): Promise<{ keys: string[]; text: string }> {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    keys.push(...batch)
  } while (cursor !== '0')
  const parts: string[] = []
  for (const key of keys) {
    const type = await redis.type(key)
    let value: unknown
    if (type === 'string') value = await redis.get(key)
    else if (type === 'hash') value = await redis.hgetall(key)
    else if (type === 'list') value = await redis.lrange(key, 0, -1)
    else if (type === 'set') value = await redis.smembers(key)
    else if (type === 'zset') value = await redis.zrange(key, 0, -1, 'WITHSCORES')
    else if (type === 'stream') value = await redis.xrange(key, '-', '+')
    parts.push(`${key} ${type} ${JSON.stringify(value)}`)
  }
  return { keys, text: parts.join('\n') }
}

describe('two adapter processes and one worker process on one Redis', () => {
  const queuePrefix = uniquePrefix('processes').replace(/:/g, '.')
  const cachePrefix = `${queuePrefix}.cache`
  const processes: FeedrunnerProcess[] = []
  const answers: AdapterAnswer[] = []
  let feedUrl = ''
  let adapterUrls: string[] = []
  let metricsUrls: string[] = []

  async function upstreamCalls(path: string): Promise<number> {
    const stats = (await (await fetch(`${feedUrl}/_stats`)).json()) as {
      requests: Record<string, number>
    }
    return stats.requests[path] ?? 0
  }

  async function ask(url: string, data: Record<string, unknown>): Promise<AdapterAnswer> {
    const answer = await postAdapter(url, data)
    answers.push(answer)
    return answer
  }

  beforeAll(async () => {
    const feedPort = await freePort()
    feedUrl = `http://127.0.0.1:${feedPort}`
    const common = {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: queuePrefix,
      SPORTS_URL: feedUrl,
      NFT_URL: feedUrl,
      WEATHER_URL: feedUrl,
      BLOCKCHAIN_URL: feedUrl,
      FEED_API_KEY,
      CACHE_TYPE: 'redis',
      CACHE_PREFIX: cachePrefix,
      LOG_LEVEL: 'debug',
    }
    const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()])
    const [feed, worker, adapterA, adapterB] = await Promise.all([
      startFeedrunnerProcess({
        name: 'feed service',
        args: ['feeds', 'serve', '--port', String(feedPort)],
        env: { FEEDS_SERVER_KEYS: FEED_API_KEY },
        ready: /feed service listening/,
      }),
      startFeedrunnerProcess({
        name: 'worker',
        args: ['worker'],
        env: common,
        ready: /fetch workers running/,
      }),
      startFeedrunnerProcess({
        name: 'adapter A',
        args: ['adapter'],
        env: { ...common, EA_PORT: String(ports[0]), METRICS_PORT: String(ports[1]) },
        ready: /adapter listening/,
      }),
      startFeedrunnerProcess({
        name: 'adapter B',
        args: ['adapter'],
        env: { ...common, EA_PORT: String(ports[2]), METRICS_PORT: String(ports[3]) },
        ready: /adapter listening/,
      }),
    ])
    processes.push(feed, worker, adapterA, adapterB)
    adapterUrls = [`http://127.0.0.1:${ports[0]}`, `http://127.0.0.1:${ports[2]}`]
    metricsUrls = [`http://127.0.0.1:${ports[1]}/metrics`, `http://127.0.0.1:${ports[3]}/metrics`]
  }, 120_000)

  afterAll(async () => {
    await Promise.all(processes.map((started) => started.stop()))
    // Our keys only: the test's unique prefixes.
    const redis = new Redis(testRedisUrl())
    for (const pattern of [`${queuePrefix}:*`, `${cachePrefix}*`]) {
      const { keys } = await dumpKeys(redis, pattern)
      if (keys.length > 0) await redis.del(...keys)
    }
    redis.disconnect()
  })

  it('serves the same requests from both adapters: one upstream call, then the shared cache', async () => {
    const path = feedCatalog['game-odds'].path
    const before = await upstreamCalls(path)
    const request = {
      endpoint: 'game-odds',
      ...feedCatalog['game-odds'].example,
      path: '$.data.homeMoneyLine',
      times: '100',
      type: 'uint256',
    }
    const fromA = await ask(adapterUrls[0]!, request)
    const fromB = await ask(adapterUrls[1]!, request)
    expect(fromA.status, fromA.text).toBe(200)
    expect(fromB.status, fromB.text).toBe(200)
    expect(fromA.body.result).toBe('160')
    expect(fromB.body).toEqual(fromA.body)
    expect((await upstreamCalls(path)) - before).toBe(1)
  })

  it('coalesces concurrent equal requests across the two adapters', async () => {
    const path = feedCatalog.boxscores.path
    const before = await upstreamCalls(path)
    const request = {
      endpoint: 'boxscores',
      ...feedCatalog.boxscores.example,
      path: 'data.sideAScore',
    }
    const concurrent = await Promise.all(
      Array.from({ length: 20 }, (_, index) => ask(adapterUrls[index % 2]!, request)),
    )
    expect(concurrent.map((answer) => answer.status)).toEqual(Array(20).fill(200))
    expect((await upstreamCalls(path)) - before).toBe(1)
  })

  it('serves every family through the worker process', async () => {
    for (const entry of [
      feedCatalog['collection-floor-price'],
      feedCatalog.weather,
      feedCatalog.transaction,
    ]) {
      const answer = await ask(adapterUrls[1]!, { endpoint: entry.name, ...entry.example })
      expect(answer.status, answer.text).toBe(200)
      expect((answer.body.data as Record<string, unknown>).result).toBe('success')
    }
  })

  it('refuses a client key (even the real one) with 400 and does not echo it', async () => {
    const answer = await ask(adapterUrls[0]!, {
      endpoint: 'game-odds',
      ...feedCatalog['game-odds'].example,
      key: FEED_API_KEY,
    })
    expect(answer.status).toBe(400)
    expect(answer.text).toContain('[Param: key]')
    const bad = await ask(adapterUrls[0]!, {
      endpoint: 'game-odds',
      ...feedCatalog['game-odds'].example,
      date: 'yesterday',
      key: FEED_API_KEY,
    })
    expect(bad.status).toBe(400)
  })

  it('leaves no trace of the key: Redis keys and values, logs, responses, metrics', async () => {
    const redis = new Redis(testRedisUrl())
    const queue = await dumpKeys(redis, `${queuePrefix}:*`)
    const cache = await dumpKeys(redis, `${cachePrefix}*`)
    redis.disconnect()
    // The scan must have found what this run stored, or finding nothing would prove nothing.
    expect(queue.keys.some((key) => key.includes('fetch-sports'))).toBe(true)
    expect(cache.keys.length).toBeGreaterThan(0)
    expect(queue.text).toContain('homeMoneyLine')
    const metrics = await Promise.all(metricsUrls.map(async (url) => (await fetch(url)).text()))
    expect(metrics.every((text) => text.includes('http_requests_total'))).toBe(true)
    // The package's version, however the process was started (npm sets npm_package_version only
    // under npm run; these processes are started as node bin/feedrunner.js).
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }
    for (const text of metrics) expect(text).toContain(`app_version="${version}"`)
    const logs = processes.map((started) => started.output())
    expect(logs.join('').length).toBeGreaterThan(0)

    const places: Record<string, string> = {
      'Redis (queues)': queue.text,
      'Redis (cache)': cache.text,
      responses: answers.map((answer) => answer.text).join('\n'),
      metrics: metrics.join('\n'),
      ...Object.fromEntries(
        processes.map((started, index) => [`log of ${started.name}`, logs[index]!]),
      ),
    }
    for (const [place, text] of Object.entries(places)) {
      expect(text.includes(FEED_API_KEY), `the key appears in ${place}`).toBe(false)
      expect(
        text.includes(encodeURIComponent(FEED_API_KEY).slice(0, 20)),
        `a fragment of the key appears in ${place}`,
      ).toBe(false)
    }
  })
})
