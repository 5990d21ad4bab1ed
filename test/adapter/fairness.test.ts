import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunningAdapter } from '../../src/adapter/adapter.ts'
import { FetchShares } from '../../src/adapter/fetch-shares.ts'
import type { Settings } from '../../src/config/settings.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { createFetchQueue } from '../../src/queue/factories.ts'
import { testRedisUrl } from '../support/redis.ts'
import {
  adapterSettings,
  oddsEnvelope,
  sendJson,
  startAdapterWithWorkers,
  startEmulatedFeed,
  type AdapterWithWorkers,
  type EmulatedFeed,
} from './support.ts'

/**
 * Issue 38, point 6: one client with 300 requests in flight cannot make another client wait behind
 * them. Clients are told apart by address: the flood comes from 127.0.0.1, the other client from
 * 127.0.0.2 (both loopback). The proof is an order, not a time: how many of the flood's fetches the
 * feed service served between the other client's request and its fetch. The times are printed.
 */
const FLOOD = 300
const CONCURRENCY = 4
const game = { endpoint: 'game-odds', region: 'england', sport: 'soccer', league: 'epl' }

describe('FetchShares', () => {
  it("numbers a client's fetches by how many it has in flight, never below one still in flight", () => {
    const shares = new FetchShares()
    const flood = Array.from({ length: 5 }, () => shares.enter('flooder'))
    expect(flood.map((share) => share.priority)).toEqual([1, 2, 3, 4, 5])
    expect(shares.enter('other').priority).toBe(1)
    // The flooder's first four are answered: its next one still queues behind its fifth.
    for (const share of flood.slice(0, 4)) share.leave()
    const next = shares.enter('flooder')
    expect(next.priority).toBe(5)
    flood[4]!.leave()
    flood[4]!.leave() // a second leave changes nothing
    expect(shares.enter('flooder').priority).toBe(5)
    // With nothing in flight it starts again from 1.
    const fresh = new FetchShares()
    fresh.enter('a').leave()
    expect(fresh.enter('a').priority).toBe(1)
    void next
  })

  it('forgets a client with nothing in flight', () => {
    const shares = new FetchShares()
    for (let index = 0; index < 1_000; index++) shares.enter(`client-${index}`).leave()
    expect(shares.clientCount).toBe(0)
  })
})

describe('a flooding client and another one, for real', () => {
  let feed: EmulatedFeed
  let parts: AdapterWithWorkers
  let adapter: RunningAdapter
  let settings: Settings
  const flooder = new Agent({ localAddress: '127.0.0.1', connections: FLOOD + 10 })
  const other = new Agent({ localAddress: '127.0.0.2' })

  beforeAll(async () => {
    // Every answer takes 10 ms; the family's rate limit keeps a flood queued for seconds.
    feed = await startEmulatedFeed((query, response) => {
      setTimeout(
        () => sendJson(response, 200, oddsEnvelope(query, { home: 1.6, draw: 4.2, away: 5.25 })),
        10,
      )
    })
    settings = adapterSettings('fairness', feed.url, {
      FEED_API_KEY: 'fairness-key-0c1d2e3f',
      FETCH_WORKER_CONCURRENCY: String(CONCURRENCY),
      RATE_LIMIT_SPORTS_PER_SECOND: '50',
      ADAPTER_TIMEOUT_MS: '60000',
    })
    parts = await startAdapterWithWorkers(settings)
    adapter = parts.adapter
  })
  afterAll(async () => {
    await parts?.close()
    await feed?.close()
    await flooder.close()
    await other.close()
  })

  /** POSTs one request from a client; resolves with its status and how long it took. */
  async function post(from: Agent, homeTeam: string): Promise<{ status: number; ms: number }> {
    const started = performance.now()
    const answer = await request(adapter.url, {
      method: 'POST',
      dispatcher: from,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: '1', data: { ...game, date: '2024-08-16', homeTeam } }),
    })
    await answer.body.text()
    return { status: answer.statusCode, ms: Math.round(performance.now() - started) }
  }

  /** Where the feed service received the call for `homeTeam`, in the order it received them. */
  function served(homeTeam: string): number {
    return feed.requests.findIndex((query) => query.get('homeTeam') === homeTeam)
  }

  async function until(condition: () => boolean): Promise<void> {
    // A bound that only catches a hang.
    for (let waited = 0; !condition(); waited += 20) {
      if (waited > 60_000) throw new Error('timed out waiting for the flood')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  it("serves the other client's request next, while the flooder's own late one waits its turn", async () => {
    // Warm, alone: the other client's requests take this long with nothing else queued.
    const alone: number[] = []
    for (const team of ['Warm FC', 'Alone 1', 'Alone 2', 'Alone 3']) {
      const answer = await post(other, team)
      expect(answer.status).toBe(200)
      if (team !== 'Warm FC') alone.push(answer.ms)
    }
    const flood = Array.from({ length: FLOOD }, (_, index) => post(flooder, `Flood ${index}`))
    // Every request of the flood queued (so the flooder has 300 in flight), and the feed busy.
    const connection = createRedisConnection(testRedisUrl(), 'client')
    const queue = createFetchQueue(settings, 'sports', connection)
    let queued = 0
    const counting = setInterval(() => {
      void queue
        .getJobCounts('prioritized', 'wait', 'active', 'completed', 'delayed')
        .then((counts) => (queued = Object.values(counts).reduce((sum, count) => sum + count, 0)))
        .catch(() => undefined)
    }, 20)
    await until(() => queued >= FLOOD + 1 && feed.requests.length >= 20)
    clearInterval(counting)
    await queue.close()
    connection.disconnect()
    const sentAt = feed.requests.length
    const lateAnswer = post(flooder, 'Late FC')
    // The other client's requests one after another while the flood is served: each is fetched
    // before all but what the workers had already taken of the flood.
    const during: number[] = []
    const ahead: number[] = []
    for (const team of ['Other 1', 'Other 2', 'Other 3']) {
      const before = feed.requests.length
      const answer = await post(other, team)
      expect(answer.status).toBe(200)
      during.push(answer.ms)
      ahead.push(served(team) - before)
    }
    const late = await lateAnswer
    const floodAnswers = await Promise.all(flood)
    expect(late.status).toBe(200)
    expect(floodAnswers.every((answer) => answer.status === 200)).toBe(true)
    for (const count of ahead) expect(count).toBeLessThanOrEqual(2 * CONCURRENCY + 2)
    // The flooder's late request waited for nearly all of the flood left.
    const lateAhead = served('Late FC') - sentAt
    expect(lateAhead).toBeGreaterThan((FLOOD - sentAt) / 2)
    const floodMs = Math.max(...floodAnswers.map((answer) => answer.ms))
    console.log(
      `[fairness] the other client alone ${alone.join(', ')} ms; during a flood of ${FLOOD}: ${during.join(', ')} ms (${ahead.join(', ')} of the flood's fetches before each); the flooder's late request ${late.ms} ms (${lateAhead} before it); the whole flood ${floodMs} ms`,
    )
  }, 120_000)
})
