import { existsSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSettings } from '../../src/config/settings.ts'
import { FetchQueueClient } from '../../src/queue/fetch-queue.ts'
import { sendJson } from '../pipeline/support/http-server.ts'
import { startFeedService, TEST_KEY } from '../feeds/support.ts'
import { deleteKeys } from '../adapter/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { LIBFAKETIME, startPart, stopPart, type PartProcess } from './support.ts'

/** How long an answer is shared (CACHE_TTL_SPORTS_MS here); a failure is shared for a second. */
const CACHE_TTL_MS = 1_000
/** Past either window whatever the machine's load: the wait only bounds, nothing races it. */
const PAST_WINDOW_MS = 2_500

/**
 * A fetch job's outcome is shared with equal requests for a while: a failure for a second (requests
 * that were on their way), an answer for the family's cache TTL. How old an outcome is decides
 * whether a request shares it or asks the feed service again, across processes whose clocks need not
 * agree: here the fetch worker's wall clock is 300 s ahead of the adapter's (libfaketime), as on a
 * host whose clock drifted. Found by the fault search (seed 2128096476): a failure finished by such a
 * worker looked 300 s younger than it was, so every request for that query got the old failure for
 * five minutes after the feed service was back.
 */
describe('clock skew: fetch outcomes shared by age, with the fetch worker 300 s ahead', () => {
  let feeds: Awaited<ReturnType<typeof startFeedService>>
  let worker: PartProcess
  let client: FetchQueueClient
  let feedDown = false
  let feedCalls = 0
  const prefix = uniquePrefix('rel-skew-fetch')

  beforeAll(async () => {
    if (!existsSync(LIBFAKETIME))
      throw new Error(`${LIBFAKETIME} is missing: apt-get install faketime (.ci/run does this)`)
    feeds = await startFeedService({
      keys: [TEST_KEY],
      // While the feed is "down" every call gets a 503: retryable, as an outage is.
      intercept: (_call, response) => {
        feedCalls++
        if (!feedDown) return false
        sendJson(response, 503, { status: 503, result: 'error', message: 'down for the test' })
        return true
      },
    })
    const env = {
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: prefix,
      SPORTS_URL: feeds.url,
      FEED_API_KEY: TEST_KEY,
      CACHE_TTL_SPORTS_MS: String(CACHE_TTL_MS),
      FETCH_ATTEMPTS: '2',
      FETCH_BACKOFF_MS: '50',
    }
    worker = await startPart('worker', {
      ...env,
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME: '+300s',
      // Timers run on the monotonic clock: only the wall clock (Date.now()) is shifted.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    })
    client = FetchQueueClient.open(parseSettings(env))
    await client.waitUntilReady()
  }, 120_000)

  afterAll(async () => {
    await client?.close()
    await stopPart(worker)
    await feeds?.stop()
    await deleteKeys(testRedisUrl(), `${prefix}:*`)
  }, 60_000)

  const odds = (homeTeam: string) => ({
    endpoint: 'game-odds',
    params: { sport: 'soccer', region: 'england', league: 'epl', date: '2024-08-17', homeTeam },
  })
  it('asks the feed service again once a failure is older than a second', async () => {
    feedDown = true
    const failed = await client.fetch('sports', odds('Ipswich'), 30_000)
    expect(failed.ok).toBe(false)
    feedDown = false
    await new Promise((resolve) => setTimeout(resolve, PAST_WINDOW_MS))
    const after = await client.fetch('sports', odds('Ipswich'), 30_000)
    expect(after.ok).toBe(true)
  }, 90_000)

  it('asks the feed service again once an answer is older than the cache TTL', async () => {
    const before = feedCalls
    const first = await client.fetch('sports', odds('West Ham'), 30_000)
    expect(first.ok).toBe(true)
    expect(feedCalls).toBe(before + 1)
    await new Promise((resolve) => setTimeout(resolve, PAST_WINDOW_MS))
    const second = await client.fetch('sports', odds('West Ham'), 30_000)
    expect(second.ok).toBe(true)
    expect(feedCalls).toBe(before + 2)
  }, 90_000)
})
