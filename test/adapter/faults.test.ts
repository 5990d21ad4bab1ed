import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../../src/adapter/workers.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings, type Settings } from '../../src/config/settings.ts'
import { freePort } from '../../src/dev/ports.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  deleteKeys,
  errorEnvelope,
  oddsEnvelope,
  postAdapter,
  sendJson,
  startEmulatedFeed,
  type EmulatedFeed,
} from './support.ts'

const RIGHT_KEY = 'faults-right-key-7f3a'
/** Prefixes this file used; their keys are removed from the shared Redis at the end. */
const usedPrefixes: string[] = []
afterAll(async () => {
  for (const prefix of usedPrefixes) await deleteKeys(testRedisUrl(), `${prefix}:*`)
})

const game = {
  endpoint: 'game-odds',
  region: 'england',
  sport: 'soccer',
  league: 'epl',
  date: '2024-08-16',
}

function settingsFor(
  redisUrl: string,
  feedUrl: string,
  extra: Record<string, string> = {},
): Settings {
  const prefix = uniquePrefix('faults').replace(/:/g, '.')
  if (redisUrl === testRedisUrl()) usedPrefixes.push(prefix)
  return parseSettings({
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    SPORTS_URL: feedUrl,
    FEED_API_KEY: RIGHT_KEY,
    FETCH_TIMEOUT_MS: '800',
    FETCH_ATTEMPTS: '3',
    FETCH_BACKOFF_MS: '50',
    ADAPTER_TIMEOUT_MS: '1500',
    LOG_LEVEL: 'silent',
    ...extra,
  })
}

/**
 * The remote service, emulated: a key check (401 with the service's description), a team whose
 * first call fails with 500, and a team for which the service never answers.
 */
async function startFaultyFeed(): Promise<EmulatedFeed> {
  const flakyCalls = { count: 0 }
  return startEmulatedFeed((query, response) => {
    if (query.get('key') !== RIGHT_KEY)
      return sendJson(response, 401, errorEnvelope(401, 'parameter key is not a valid key'))
    const team = query.get('homeTeam')
    if (team === 'Silent FC') return // never answers
    if (team === 'Nobody FC')
      return sendJson(response, 404, errorEnvelope(404, 'no game of Nobody FC on 2024-08-16'))
    if (team === 'Flaky FC' && ++flakyCalls.count === 1)
      return sendJson(response, 500, errorEnvelope(500, 'internal error, try again'))
    sendJson(response, 200, oddsEnvelope(query, { home: 1.6, draw: 4.2, away: 5.25 }))
  })
}

function callsFor(feed: EmulatedFeed, team: string): number {
  return feed.requests.filter((query) => query.get('homeTeam') === team).length
}

describe('adapter error statuses, produced for real', () => {
  let feed: EmulatedFeed
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers
  /** What the adapter and the fetch workers log, one JSON line each. */
  const logLines: string[] = []

  beforeAll(async () => {
    feed = await startFaultyFeed()
    const settings = settingsFor(testRedisUrl(), feed.url, {
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    })
    const logger = createLogger(settings, 'faults', {
      write: (line: string) => void logLines.push(line),
    })
    adapter = await startAdapter({
      settings,
      logger,
      framework: { EA_PORT: 0, METRICS_ENABLED: false },
    })
    workers = await startFetchWorkers({ settings, logger })
  })
  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
    await feed?.close()
  })

  it('answers 400 naming the parameter, before anything is queued', async () => {
    const before = feed.requests.length
    const badDate = await postAdapter(adapter.url, {
      ...game,
      homeTeam: 'Fulham',
      date: '2024-13-01',
    })
    expect(badDate.status).toBe(400)
    expect(badDate.text).toContain('date')
    const missing = await postAdapter(adapter.url, { ...game, homeTeam: undefined })
    expect(missing.status).toBe(400)
    expect(missing.text).toContain('homeTeam')
    const badTimes = await postAdapter(adapter.url, { ...game, homeTeam: 'Fulham', times: 'ten' })
    expect(badTimes.status).toBe(400)
    expect(badTimes.text).toContain('times')
    const badPath = await postAdapter(adapter.url, {
      ...game,
      homeTeam: 'Fulham',
      path: `data.${'x'.repeat(1_000)}`,
    })
    expect(badPath.status).toBe(400)
    expect(badPath.text).toContain('[Param: path]')
    const badType = await postAdapter(adapter.url, { ...game, homeTeam: 'Fulham', type: 'uint8' })
    expect(badType.status).toBe(400)
    expect(badType.text).toContain('type')
    expect(feed.requests.length).toBe(before)
  })

  it("answers 404 for an endpoint named after an object's own members, and goes on serving (the fuzz test found a 500)", async () => {
    for (const endpoint of [
      '__proto__',
      'constructor',
      'CONSTRUCTOR',
      'toString',
      'hasOwnProperty',
    ]) {
      const answer = await postAdapter(adapter.url, { endpoint })
      expect(answer.status, `${endpoint}: ${answer.text}`).toBe(404)
      expect(answer.text).toContain('does not have a')
    }
    expect(
      (await postAdapter(adapter.url, { ...game, homeTeam: 'Fulham', date: '2024-13-01' })).status,
    ).toBe(400)
  })

  it('answers a body that is not JSON with a 400 in its JSON error shape (issue 19, item 16)', async () => {
    for (const body of ['{"id": "1", "data": {', 'not json at all', '']) {
      const response = await fetch(adapter.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      const text = await response.text()
      expect(response.status, text).toBe(400)
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      expect(JSON.parse(text), text).toMatchObject({
        status: 'errored',
        statusCode: 400,
        error: { name: 'AdapterInputError', message: expect.stringMatching(/not JSON/) },
      })
    }
  })

  it('logs an expected upstream error as one line with its status and endpoint, no stack trace (issue 19, item 16)', async () => {
    const answer = await postAdapter(adapter.url, { ...game, homeTeam: 'Nobody FC' })
    expect(answer.status).toBe(404)
    const about = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => JSON.stringify(entry).includes('Nobody FC'))
    // The fetch worker's line and the adapter's answer (the framework's line): in production they are
    // two processes, each with its one line.
    expect(about.length, JSON.stringify(about)).toBeGreaterThanOrEqual(1)
    expect(about.length, JSON.stringify(about)).toBeLessThanOrEqual(2)
    for (const entry of about) expect(JSON.stringify(entry)).not.toMatch(/\\n\s+at /)
    expect(about.find((entry) => entry.msg === 'fetch failed')).toMatchObject({
      status: 404,
      endpoint: 'game-odds',
    })
  })

  it('answers 400 naming path when the path leads to no value', async () => {
    const answer = await postAdapter(adapter.url, {
      ...game,
      homeTeam: 'Fulham',
      path: '$.data.noSuchField',
    })
    expect(answer.status).toBe(400)
    expect(answer.text).toContain('[Param: path]')
    expect(answer.text).toContain('noSuchField')
  })

  it('retries a 500 and succeeds', async () => {
    const answer = await postAdapter(adapter.url, {
      ...game,
      homeTeam: 'Flaky FC',
      path: 'data.homeMoneyLine',
      times: '100',
      type: 'uint256',
    })
    expect(answer.status).toBe(200)
    expect(answer.body.result).toBe('160')
    expect(callsFor(feed, 'Flaky FC')).toBe(2)
  })

  it('answers 504 within the timeout when the service never answers, saying what it waited for', async () => {
    const started = Date.now()
    const answer = await postAdapter(adapter.url, { ...game, homeTeam: 'Silent FC' })
    const took = Date.now() - started
    expect(answer.status).toBe(504)
    expect(took).toBeGreaterThanOrEqual(1_400)
    expect(took).toBeLessThan(30_000) // the service never answers: only a hang gets here
    expect(answer.text).toMatch(/1500 ms waiting for the sports fetch/)
    expect(answer.text).toMatch(/feed service has not answered|waiting to be retried/)
  })

  it('answers 502 with the service words when retries are exhausted', async () => {
    // Silent FC keeps timing out; once the job has failed for good a request sees its outcome.
    const deadline = Date.now() + 60_000 // a hang catcher
    let answer = await postAdapter(adapter.url, { ...game, homeTeam: 'Silent FC' })
    while (answer.status === 504 && Date.now() < deadline)
      answer = await postAdapter(adapter.url, { ...game, homeTeam: 'Silent FC' })
    expect(answer.status).toBe(502)
    expect(answer.text).toMatch(/after 3 attempts: no answer from the feed service within 800 ms/)
    expect(callsFor(feed, 'Silent FC')).toBe(3)
  })
})

describe('a wrong key', () => {
  let feed: EmulatedFeed
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers

  beforeAll(async () => {
    feed = await startFaultyFeed()
    const settings = settingsFor(testRedisUrl(), feed.url, {
      FEED_API_KEY: 'faults-wrong-key-91bc',
    })
    adapter = await startAdapter({ settings, framework: { EA_PORT: 0, METRICS_ENABLED: false } })
    workers = await startFetchWorkers({ settings })
  })
  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
    await feed?.close()
  })

  it('passes the 401 on with the service description, without retrying', async () => {
    const answer = await postAdapter(adapter.url, { ...game, homeTeam: 'Fulham' })
    expect(answer.status).toBe(401)
    expect(answer.text).toContain('parameter key is not a valid key')
    expect(answer.text).not.toContain('faults-wrong-key-91bc')
    expect(callsFor(feed, 'Fulham')).toBe(1)
  })
})

describe('a feed service that cannot be reached', () => {
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers

  beforeAll(async () => {
    // Nothing listens on a free port: every connection is refused.
    const settings = settingsFor(testRedisUrl(), `http://127.0.0.1:${await freePort()}`, {
      ADAPTER_TIMEOUT_MS: '20000',
    })
    adapter = await startAdapter({ settings, framework: { EA_PORT: 0, METRICS_ENABLED: false } })
    workers = await startFetchWorkers({ settings })
  })
  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
  })

  it('answers 503 once every attempt was refused, so a caller tries again later', async () => {
    const answer = await postAdapter(adapter.url, { ...game, homeTeam: 'Fulham' })
    expect(answer.status).toBe(503)
    expect(answer.body).toMatchObject({ error: { name: 'FeedServiceUnavailable' } })
    expect(answer.text).toMatch(/could not be reached for the game-odds request after 3 attempts/)
    expect(answer.text).toContain('ECONNREFUSED')
  })
})

describe('Redis going away and coming back', () => {
  let redis: PrivateRedis
  let feed: EmulatedFeed
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers

  beforeAll(async () => {
    redis = await startPrivateRedis()
    feed = await startFaultyFeed()
    const settings = settingsFor(redis.url, feed.url, { ADAPTER_TIMEOUT_MS: '5000' })
    adapter = await startAdapter({
      settings,
      framework: { EA_PORT: 0, METRICS_ENABLED: false, CACHE_TYPE: 'redis' },
    })
    workers = await startFetchWorkers({ settings })
  })
  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
    await feed?.close()
    await redis?.stop()
  })

  it('answers 503 at once while Redis is down and serves again once it is back', async () => {
    const before = await postAdapter(adapter.url, { ...game, homeTeam: 'Before FC' })
    expect(before.status).toBe(200)

    await redis.stop()
    const started = Date.now()
    const during = await postAdapter(adapter.url, { ...game, homeTeam: 'During FC' })
    expect(during.status).toBe(503)
    // 503 (not the 504 of a wait that ran out) proves it did not wait; the bound only catches a hang.
    expect(Date.now() - started).toBeLessThan(30_000)
    expect(during.text).toMatch(/Redis is unavailable/)

    redis = await startPrivateRedis({ port: redis.port })
    const deadline = Date.now() + 15_000
    let after = await postAdapter(adapter.url, { ...game, homeTeam: 'After FC' })
    while (after.status === 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      after = await postAdapter(adapter.url, { ...game, homeTeam: 'After FC' })
    }
    expect(after.status).toBe(200)
    expect(after.body.result).toBe(1.6)
  })
})
