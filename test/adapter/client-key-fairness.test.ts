import type { ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { DirectFetches } from '../../src/adapter/direct-fetches.ts'
import { createLogger } from '../../src/config/logger.ts'
import { errorKindOf } from '../../src/config/errors.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { waitFor } from '../../src/dev/process.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  oddsEnvelope,
  postAdapter,
  sendJson,
  startEmulatedFeed,
  type AdapterAnswer,
  type EmulatedFeed,
} from './support.ts'

const FLOODER = 'CLIENTCANARY-flood-1187'
const OTHER = 'CLIENTCANARY-other-5521'
const game = { endpoint: 'game-odds', ...feedCatalog['game-odds'].example }

/**
 * Fetches with a client's own key are never queued, so the fetch queues' fair shares do not see
 * them: a client flooding with its key took as many upstream calls as it liked. They share
 * ADAPTER_CLIENT_KEY_FETCHES slots, a free one going to the client with the fewest running. An
 * order, not a time: the feed holds every call until the test lets it answer.
 */
describe('ALLOW_CLIENT_KEYS: fair slots for fetches with a client key', () => {
  let feed: EmulatedFeed
  let adapter: RunningAdapter
  const slots = new DirectFetches(2)
  const held: Array<{ query: URLSearchParams; response: ServerResponse }> = []

  beforeAll(async () => {
    feed = await startEmulatedFeed((query, response) => void held.push({ query, response }))
    const settings = parseSettings({
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix('clientkey-fair').replace(/:/g, '.'),
      SPORTS_URL: feed.url,
      FEED_API_KEY: 'node-key-unused-here',
      ALLOW_CLIENT_KEYS: 'true',
      ADAPTER_CLIENT_KEY_FETCHES: '2',
      // The feed holds every call until the test answers it: no timeout may end one first.
      FETCH_TIMEOUT_MS: '60000',
      ADAPTER_TIMEOUT_MS: '60000',
      LOG_LEVEL: 'silent',
    })
    adapter = await startAdapter({
      settings,
      logger: createLogger(settings, 'adapter'),
      framework: { EA_PORT: 0, METRICS_ENABLED: false },
      directFetches: slots,
    })
  })

  afterAll(async () => {
    for (const { response } of held) if (!response.writableEnded) response.destroy()
    await adapter?.close()
    await feed?.close()
  })

  const answerNext = () => {
    const next = held.find(({ response }) => !response.headersSent)!
    sendJson(next.response, 200, oddsEnvelope(next.query, { home: 1.6, draw: 4.2, away: 5.25 }))
  }

  it("another client's first fetch goes before the flooder's waiting ones", async () => {
    const ask = (key: string, index: number): Promise<AdapterAnswer> =>
      postAdapter(adapter.url, { ...game, key, path: 'data.drawMoneyLine' }, `${key}-${index}`)
    const flood = Array.from({ length: 6 }, (_, index) => ask(FLOODER, index))
    await waitFor(
      "the flooder's two fetches upstream, four waiting",
      async () => held.length === 2 && slots.counts.waiting === 4,
      30_000,
      20,
    )
    const other = ask(OTHER, 0)
    await waitFor(
      'the other client waiting too',
      async () => slots.counts.waiting === 5,
      30_000,
      20,
    )
    answerNext()
    await waitFor('the next call upstream', async () => held.length === 3, 30_000, 20)
    expect(held[2]!.query.get('key')).toBe(OTHER)
    // The rest answered as they come, until all seven are done.
    const answers = [...flood, other]
    for (let answered = 1; answered < 7; answered++) {
      await waitFor('a call upstream to answer', async () => held.length > answered, 30_000, 20)
      answerNext()
    }
    const statuses = (await Promise.all(answers)).map((answer) => answer.status)
    expect(statuses).toEqual(new Array(7).fill(200))
  })
})

describe('DirectFetches, the slots themselves', () => {
  it('refuses a fetch that found no slot within its wait, naming the setting', async () => {
    const slots = new DirectFetches(1)
    let release = () => undefined as void
    const holding = slots.run('key-a', 1_000, () => new Promise<void>((done) => (release = done)))
    const refused = await slots.run('key-b', 50, async () => 'ran').catch((error: unknown) => error)
    expect(errorKindOf(refused)).toBe('unavailable')
    expect((refused as Error).message).toContain('ADAPTER_CLIENT_KEY_FETCHES (1)')
    expect(slots.counts).toEqual({ running: 1, waiting: 0 })
    release()
    await holding
    expect(await slots.run('key-b', 50, async () => 'ran')).toBe('ran')
  })
})
