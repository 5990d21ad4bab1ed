import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunningAdapter } from '../../src/adapter/adapter.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { createFetchQueue, type FetchQueue } from '../../src/queue/factories.ts'
import { testRedisUrl } from '../support/redis.ts'
import {
  adapterSettings,
  errorEnvelope,
  postAdapter,
  sendJson,
  startAdapterWithWorkers,
  startEmulatedFeed,
  type AdapterWithWorkers,
  type EmulatedFeed,
} from './support.ts'

/**
 * Issue 38, point 6, the adapter's edges: a placeholder outside `key` is a 400 with nothing queued;
 * an error message is at most 1 KiB, the values it repeats cut; failed fetch jobs are kept by count
 * (FETCH_FAILED_JOBS_KEPT) and by age (FETCH_FAILED_JOBS_KEPT_SECONDS), not for ever.
 */
const game = {
  endpoint: 'game-odds',
  region: 'england',
  sport: 'soccer',
  league: 'epl',
  date: '2024-08-16',
}
const KEPT = 50

describe("the adapter's edges", () => {
  let feed: EmulatedFeed
  let parts: AdapterWithWorkers
  let adapter: RunningAdapter
  let queue: FetchQueue
  const connection = createRedisConnection(testRedisUrl(), 'client')
  const logLines: string[] = []

  beforeAll(async () => {
    // The service knows no game: every fetch fails, final (404).
    feed = await startEmulatedFeed((query, response) =>
      sendJson(response, 404, errorEnvelope(404, `no game of ${query.get('homeTeam')}`)),
    )
    const settings = adapterSettings('edges', feed.url, {
      FEED_API_KEY: 'edges-key-4d5e6f7a8b',
      FETCH_FAILED_JOBS_KEPT: String(KEPT),
      FETCH_FAILED_JOBS_KEPT_SECONDS: '2',
      RATE_LIMIT_SPORTS_PER_SECOND: '1000',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    })
    parts = await startAdapterWithWorkers(settings, logLines)
    adapter = parts.adapter
    queue = createFetchQueue(settings, 'sports', connection)
  })
  afterAll(async () => {
    await queue?.close()
    await parts?.close()
    await feed?.close()
    connection.disconnect()
  })

  const jobsQueued = async () =>
    Object.values(await queue.getJobCounts()).reduce((sum, count) => sum + count, 0)

  it('refuses a placeholder outside key with a 400 naming the parameter; nothing is queued', async () => {
    for (const [param, value] of [
      ['homeTeam', '##env:FEED_API_KEY'],
      ['league', '##signKey'],
      ['path', '##env:FEED_KEY_PARTNER'],
    ] as const) {
      const answer = await postAdapter(adapter.url, { ...game, homeTeam: 'Fulham', [param]: value })
      expect(answer.status, param).toBe(400)
      expect((answer.body.error as { message: string }).message).toBe(
        `[Param: ${param}] placeholders (##signKey, ##env:NAME) are substituted in key only`,
      )
    }
    expect(await jobsQueued()).toBe(0)
    expect(feed.requests).toHaveLength(0)
  })

  it('bounds every error message at 1 KiB and cuts the values it repeats', async () => {
    const cases: Array<[string, Record<string, unknown>, number, RegExp]> = [
      [
        '100,000-digit times',
        { ...game, homeTeam: 'Fulham', times: '9'.repeat(100_000) + 'x' },
        400,
        /^\[Param: times\] times must be a decimal number, got "9{64}\.\.\. \(100001 characters\)"$/,
      ],
      [
        '100 kB endpoint',
        { ...game, endpoint: 'e'.repeat(100_000) },
        404,
        /cut: 100036 characters/,
      ],
      [
        '100 kB path',
        { ...game, homeTeam: 'Fulham', path: `data.${'x'.repeat(100_000)}[` },
        400,
        /^\[Param: path\] path data\.x+\.\.\.: longer than 1000 characters$/,
      ],
      [
        '100 kB team',
        { ...game, homeTeam: 'T'.repeat(100_000) },
        400,
        /^\[Param: homeTeam\] parameter homeTeam must be at most 100 characters/,
      ],
    ]
    for (const [name, data, status, message] of cases) {
      const answer = await postAdapter(adapter.url, data)
      expect(answer.status, name).toBe(status)
      const text = (answer.body.error as { message: string }).message
      expect(text, name).toMatch(message)
      expect(Buffer.byteLength(text), name).toBeLessThanOrEqual(1024)
      expect(answer.text.length, name).toBeLessThan(1400)
    }
    // The framework's log line of each failed request has its strings cut too.
    expect(Math.max(...logLines.map((line) => line.length))).toBeLessThan(16 * 1024)
  })

  it('keeps failed fetch jobs by count, then by age', async () => {
    const teams = Array.from({ length: 2 * KEPT + 20 }, (_, index) => `Nobody ${index}`)
    for (let start = 0; start < teams.length; start += 30) {
      const answers = await Promise.all(
        teams
          .slice(start, start + 30)
          .map((homeTeam) => postAdapter(adapter.url, { ...game, homeTeam })),
      )
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 404))
    }
    expect(feed.requests.length).toBe(teams.length)
    const failed = await queue.getJobCountByTypes('failed')
    expect(failed).toBeGreaterThan(0)
    expect(failed).toBeLessThanOrEqual(KEPT)
    // No fetch fails after these: the fetch workers' sweep removes them once they are 2 s old.
    for (let waited = 0; (await queue.getJobCountByTypes('failed')) > 0; waited += 100) {
      if (waited > 60_000) throw new Error('failed jobs were never swept')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(await queue.getJobCountByTypes('failed')).toBe(0)
  }, 120_000)
})
