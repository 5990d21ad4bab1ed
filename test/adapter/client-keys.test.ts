import { Writable } from 'node:stream'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../../src/adapter/workers.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  errorEnvelope,
  oddsEnvelope,
  postAdapter,
  sendJson,
  startEmulatedFeed,
  type AdapterAnswer,
  type EmulatedFeed,
} from './support.ts'

const CLIENT_KEY = 'CLIENTCANARY-good-4471'
const WRONG_CLIENT_KEY = 'CLIENTCANARY-wrong-9902'
const NODE_KEY = 'node-key-for-client-key-test'
const game = { endpoint: 'game-odds', ...feedCatalog['game-odds'].example }

describe('ALLOW_CLIENT_KEYS=true: a client key works, in this process only', () => {
  let feed: EmulatedFeed
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers
  let redis: Redis
  const logLines: string[] = []
  const answers: AdapterAnswer[] = []
  const queuePrefix = uniquePrefix('clientkeys').replace(/:/g, '.')
  const cachePrefix = `${queuePrefix}.cache`

  beforeAll(async () => {
    // The remote service checks keys and, like a careless service, quotes a refused one.
    feed = await startEmulatedFeed((query, response) => {
      const key = query.get('key') ?? ''
      if (key !== CLIENT_KEY && key !== NODE_KEY)
        return sendJson(response, 401, errorEnvelope(401, `key ${key} is not valid`))
      sendJson(response, 200, oddsEnvelope(query, { home: 1.6, draw: 4.2, away: 5.25 }))
    })
    const settings = parseSettings({
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: queuePrefix,
      SPORTS_URL: feed.url,
      FEED_API_KEY: NODE_KEY,
      ALLOW_CLIENT_KEYS: 'true',
      LOG_LEVEL: 'trace',
    })
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString('utf8'))
        done()
      },
    })
    const logger = createLogger(settings, 'adapter', destination)
    adapter = await startAdapter({
      settings,
      logger,
      framework: {
        EA_PORT: 0,
        METRICS_ENABLED: false,
        CACHE_TYPE: 'redis',
        CACHE_PREFIX: cachePrefix,
      },
    })
    workers = await startFetchWorkers({ settings, logger })
    redis = new Redis(testRedisUrl())
  })

  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
    await feed?.close()
    const keys = [
      ...(await redis.keys(`${queuePrefix}:*`)),
      ...(await redis.keys(`${cachePrefix}*`)),
    ]
    if (keys.length > 0) await redis.del(...keys)
    redis?.disconnect()
  })

  async function ask(data: Record<string, unknown>): Promise<AdapterAnswer> {
    const answer = await postAdapter(adapter.url, data)
    answers.push(answer)
    return answer
  }

  it('fetches with the client key, without the queue and without caching', async () => {
    const first = await ask({
      ...game,
      key: CLIENT_KEY,
      path: 'data.drawMoneyLine',
      times: '100',
      type: 'uint256',
    })
    expect(first.status, first.text).toBe(200)
    expect(first.body.result).toBe('420')
    const second = await ask({
      ...game,
      key: CLIENT_KEY,
      path: 'data.drawMoneyLine',
      times: '100',
      type: 'uint256',
    })
    expect(second.status).toBe(200)
    // Not cached, not coalesced: each request with a client key is its own upstream call.
    expect(feed.requests.filter((query) => query.get('key') === CLIENT_KEY).length).toBe(2)
    // Nothing was queued for it and nothing cached.
    expect(await redis.keys(`${queuePrefix}:fetch-sports:game-odds-*`)).toEqual([])
    expect(await redis.keys(`${cachePrefix}*`)).toEqual([])
  })

  it('passes a refusal of the client key on, without the key', async () => {
    const answer = await ask({ ...game, key: WRONG_CLIENT_KEY })
    expect(answer.status).toBe(401)
    expect(answer.text).toContain('is not valid')
    expect(answer.text).not.toContain(WRONG_CLIENT_KEY)
  })

  it('still serves placeholder requests through the queue with the node key', async () => {
    const answer = await ask({ ...game, key: '##signKey', path: 'data.awayMoneyLine' })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body.result).toBe(5.25)
    expect((await redis.keys(`${queuePrefix}:fetch-sports:game-odds-*`)).length).toBeGreaterThan(0)
    expect((await redis.keys(`${cachePrefix}*`)).length).toBeGreaterThan(0)
  })

  it('never logs, stores or returns a client key', async () => {
    // An invalid request with a client key: the framework logs the request body with its error.
    const invalid = await ask({ ...game, date: '2024-02-31', key: CLIENT_KEY })
    expect(invalid.status).toBe(400)
    const stored: string[] = []
    for (const key of [
      ...(await redis.keys(`${queuePrefix}:*`)),
      ...(await redis.keys(`${cachePrefix}*`)),
    ]) {
      const type = await redis.type(key)
      stored.push(
        key,
        type === 'string'
          ? String(await redis.get(key))
          : type === 'hash'
            ? JSON.stringify(await redis.hgetall(key))
            : type === 'stream'
              ? JSON.stringify(await redis.xrange(key, '-', '+'))
              : '',
      )
    }
    const logs = logLines.join('')
    expect(logs.length).toBeGreaterThan(0)
    expect(logs).toContain('ErrorCatchingMiddleware')
    for (const [place, text] of Object.entries({
      logs,
      redis: stored.join('\n'),
      responses: answers.map((answer) => answer.text).join('\n'),
    })) {
      expect(text.includes('CLIENTCANARY'), `a client key appears in ${place}`).toBe(false)
    }
  })
})
