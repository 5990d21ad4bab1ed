import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../../src/adapter/workers.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { createFeedServer, type FeedServer } from '../../src/feeds/server/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { deleteKeys, postAdapter } from './support.ts'

const KEY = 'coalescing-test-key-0a77'

describe('coalescing and the per-family rate limit', () => {
  let feed: FeedServer
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers
  const prefix = uniquePrefix('coalescing').replace(/:/g, '.')

  beforeAll(async () => {
    feed = createFeedServer({ keys: [KEY] })
    const feedUrl = await feed.listen(0)
    const settings = parseSettings({
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: prefix,
      SPORTS_URL: feedUrl,
      WEATHER_URL: feedUrl,
      FEED_API_KEY: KEY,
      RATE_LIMIT_WEATHER_PER_SECOND: '5',
      ADAPTER_TIMEOUT_MS: '10000',
      LOG_LEVEL: 'silent',
    })
    adapter = await startAdapter({ settings, framework: { EA_PORT: 0, METRICS_ENABLED: false } })
    workers = await startFetchWorkers({ settings })
  })

  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
    await feed?.close()
    await deleteKeys(testRedisUrl(), `${prefix}:*`)
  })

  it('answers 50 concurrent equal requests with exactly one upstream call', async () => {
    const path = feedCatalog['game-odds'].path
    const before = feed.requestCount(path)
    const request = {
      endpoint: 'game-odds',
      ...feedCatalog['game-odds'].example,
      path: '$.data.awayMoneyLine',
      times: '100',
      type: 'uint256',
    }
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, index) => postAdapter(adapter.url, request, String(index))),
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(50).fill(200))
    expect(new Set(answers.map((answer) => answer.body.result))).toEqual(new Set(['525']))
    expect(feed.requestCount(path) - before).toBe(1)
  })

  it('holds 20 distinct requests to 5 per second, and all succeed', async () => {
    const path = feedCatalog.weather.path
    const before = feed.requestCount(path)
    const variant = feedCatalog.weather.variants!.find((candidate) =>
      candidate.params.includes('latitude'),
    )!
    const started = Date.now()
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, hour) =>
        postAdapter(adapter.url, {
          endpoint: 'weather',
          ...variant.example,
          dateTime: `2024-08-17T${String(hour).padStart(2, '0')}:00:00`,
          path: 'data.temperature',
        }),
      ),
    )
    const took = Date.now() - started
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200))
    expect(answers.every((answer) => typeof answer.body.result === 'number')).toBe(true)
    expect(feed.requestCount(path) - before).toBe(20)
    expect(took).toBeGreaterThanOrEqual(3_000)
    expect(took).toBeLessThan(60_000) // a hang catcher; the lower bound is the rate limit's proof
  })
})
