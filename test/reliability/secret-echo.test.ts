import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Settings } from '../../src/config/settings.ts'
import {
  adapterSettings,
  errorEnvelope,
  postAdapter,
  sendJson,
  startAdapterWithWorkers,
  startEmulatedFeed,
  type AdapterWithWorkers,
  type EmulatedFeed,
} from '../adapter/support.ts'
import { dumpKeyspace } from '../support/keyspace.ts'
import { testRedisUrl } from '../support/redis.ts'
import { echoes, longestShared } from '../support/secret-forms.ts'
import { recordFigures } from './support.ts'

/**
 * Issue 38, point 5: a feed service that gives its key back in its error body (upper-cased, halved,
 * base64, %-encoded, ...) gets it to no requester's response, no log line and no Redis record (the
 * fetch jobs' failedReason among them). The adapter and the fetch workers run for real on the test
 * Redis; the service refuses every call, each with the key in one form, as a 401 (final), a 500
 * (retried, then failed) or an error envelope with status 200. What is left of the key anywhere is
 * measured as the longest run shared with any of its forms, case-folded.
 */
const FEED_KEY = 'FeedKey/echo+check=5e6f7a8b9c0d1e2f&y'
const ECHOES = echoes(FEED_KEY)

const game = {
  endpoint: 'game-odds',
  region: 'england',
  sport: 'soccer',
  league: 'epl',
  date: '2024-08-16',
}

/** The form and status of a request's answer ride on its homeTeam: `<form> <status>`. */
async function startEchoingFeed(): Promise<EmulatedFeed> {
  return startEmulatedFeed((query, response) => {
    const [form = 'raw', status = '401'] = (query.get('homeTeam') ?? '').split(' ')
    const key = query.get('key') ?? ''
    const echo = echoes(key)[form] ?? key
    const words = `parameter key ${echo} is not a valid key for ${query.get('homeTeam')}`
    if (status === '200') return sendJson(response, 200, errorEnvelope(403, words))
    if (status === '500')
      return sendJson(response, 500, JSON.stringify({ message: `internal error (${echo})` }))
    sendJson(response, Number(status), errorEnvelope(Number(status), words))
  })
}

describe('a feed service that echoes its key', () => {
  let feed: EmulatedFeed
  let parts: AdapterWithWorkers
  let settings: Settings
  const logLines: string[] = []

  beforeAll(async () => {
    feed = await startEchoingFeed()
    settings = adapterSettings('secret-echo', feed.url, {
      FEED_API_KEY: FEED_KEY,
      FETCH_ATTEMPTS: '2',
      FETCH_BACKOFF_MS: '20',
      ADAPTER_TIMEOUT_MS: '10000',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'json',
    })
    parts = await startAdapterWithWorkers(settings, logLines)
  })
  afterAll(async () => {
    await parts?.close()
    await feed?.close()
  })

  it('gets it to no response, log line or Redis record, in any form, whole or in part', async () => {
    const answers: Array<{ form: string; status: number; text: string }> = []
    for (const status of ['401', '500', '200'])
      for (const form of Object.keys(ECHOES)) {
        const answer = await postAdapter(parts.adapter.url, {
          ...game,
          homeTeam: `${form} ${status}`,
        })
        answers.push({ form: `${form} ${status}`, status: answer.status, text: answer.text })
      }
    // The service's status and a short excerpt of its words, the key cut out.
    for (const answer of answers) {
      expect(answer.status, answer.form).toBe(
        answer.form.endsWith('401') ? 401 : answer.form.endsWith('200') ? 403 : 502,
      )
      expect(answer.text, answer.form).toMatch(/The feed service (refused|failed) the game-odds/)
      expect(answer.text.length, answer.form).toBeLessThan(1024)
    }
    expect(feed.requests.length).toBeGreaterThanOrEqual(answers.length)
    const redis = await dumpKeyspace(testRedisUrl(), settings.QUEUE_PREFIX)
    expect(redis).toContain('failedReason')
    const left = {
      responses: Math.max(...answers.map((answer) => longestShared(answer.text, FEED_KEY))),
      logLines: longestShared(logLines.join('\n'), FEED_KEY),
      redis: longestShared(redis, FEED_KEY),
    }
    // A run shorter than the scrub's 10-character window can be chance: "key" is in any message.
    expect(left.responses).toBeLessThan(10)
    expect(left.logLines).toBeLessThan(10)
    expect(left.redis).toBeLessThan(10)
    expect(logLines.some((line) => line.includes('[redacted]'))).toBe(true)
    recordFigures('secret-echo', {
      requests: answers.length,
      echoForms: Object.keys(ECHOES),
      feedCalls: feed.requests.length,
      logLines: logLines.length,
      redisBytes: redis.length,
      longestRunOfTheKeyLeft: left,
      sampleAnswer: answers.find((answer) => answer.form === 'halfUpper 401')?.text,
    })
  }, 120_000)
})
