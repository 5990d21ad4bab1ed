import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../../src/adapter/workers.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { freePort } from '../../src/dev/ports.ts'
import { catalogEntries, getEndpoint } from '../../src/feeds/catalog/index.ts'
import { createFeedServer, type FeedServer } from '../../src/feeds/server/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { FUZZ_RUNS as RUNS, recordFigures } from './support.ts'

const FEED_KEY = 'hostile-feed-key-0001'

interface Answer {
  status: number
  text: string
}

async function post(
  url: string,
  body: string | Uint8Array,
  contentType = 'application/json',
): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
  })
  return { status: response.status, text: await response.text() }
}

/** A status the adapter may give to hostile input: a 4xx, or an upstream 502/504 that names its cause. */
function acceptable(answer: Answer): boolean {
  if (answer.status >= 400 && answer.status < 500) return true
  if (answer.status === 200) return true
  // A 5xx is acceptable only with a reason a caller can act on.
  if (answer.status >= 500) {
    try {
      const body = JSON.parse(answer.text) as {
        error?: { message?: string }
        errorMessage?: string
        message?: string
      }
      const reason = body.error?.message ?? body.errorMessage ?? body.message ?? ''
      return answer.status !== 500 && reason.length > 10
    } catch {
      return false
    }
  }
  return false
}

/**
 * Hostile input to the adapter's HTTP endpoint, served by a real adapter, fetch workers and a local
 * feed service. Job specs, CBOR request data and URLs from requests: hostile-input-pipeline.test.ts.
 */
describe('hostile input', () => {
  let feeds: FeedServer
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers
  const figures: Record<string, unknown> = {}
  const statuses: Record<string, number> = {}
  const count = (answer: Answer) => (statuses[answer.status] = (statuses[answer.status] ?? 0) + 1)

  beforeAll(async () => {
    feeds = createFeedServer({ keys: [FEED_KEY] })
    const feedUrl = await feeds.listen(0)
    const settings = parseSettings({
      ...process.env,
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: uniquePrefix('rel-hostile'),
      LOG_LEVEL: 'fatal',
      SPORTS_URL: feedUrl,
      BLOCKCHAIN_URL: feedUrl,
      NFT_URL: feedUrl,
      WEATHER_URL: feedUrl,
      FEED_API_KEY: FEED_KEY,
      EA_PORT: String(await freePort()),
      FETCH_TIMEOUT_MS: '2000',
      ADAPTER_TIMEOUT_MS: '5000',
    })
    const logger = createLogger(settings, 'hostile')
    adapter = await startAdapter({ settings, logger, framework: { METRICS_ENABLED: false } })
    workers = await startFetchWorkers({ settings, logger })
  }, 180_000)

  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
    await feeds?.close()
    recordFigures('hostile-input-adapter', { ...figures, adapterStatuses: statuses })
  })

  async function stillServes(): Promise<void> {
    const entry = getEndpoint('game-odds')
    const answer = await post(
      adapter.url,
      JSON.stringify({
        id: '1',
        data: { endpoint: entry.name, ...entry.example, key: '##signKey' },
      }),
    )
    expect(answer.status, answer.text).toBe(200)
  }

  it(`adapter: ${RUNS} arbitrary JSON bodies get a 4xx or a reasoned answer, never a bare 500`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), async (value) => {
        const answer = await post(adapter.url, JSON.stringify(value))
        count(answer)
        expect(
          acceptable(answer),
          `${answer.status} ${answer.text.slice(0, 300)} for ${JSON.stringify(value).slice(0, 200)}`,
        ).toBe(true)
      }),
      { numRuns: RUNS },
    )
    await stillServes()
  }, 300_000)

  it(`adapter: ${RUNS} requests with catalog endpoints and hostile parameter values`, async () => {
    const names = catalogEntries.map((entry) => entry.name)
    const paramNames = [...new Set(catalogEntries.flatMap((entry) => Object.keys(entry.params)))]
    const hostileValue = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom(
        '##signKey',
        '##env:NODE_PRIVATE_KEY',
        '##env:PATH',
        '$(jobRun.meta)',
        '../../etc/passwd',
        '\u0000',
        '%00',
        'a'.repeat(5000),
        '1e309',
        '-0',
        'NaN',
        '0x',
        '[]',
        '{}',
      ),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 3 }),
      fc.object({ maxDepth: 2 }),
    )
    const request = fc.record({
      id: fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.constant(undefined)),
      data: fc.record({
        endpoint: fc.oneof(
          fc.constantFrom(...names),
          fc.string({ maxLength: 20 }),
          fc.constant(undefined),
        ),
        params: fc.dictionary(
          fc.oneof(
            fc.constantFrom(
              ...paramNames,
              'key',
              'path',
              'times',
              'type',
              '__proto__',
              'constructor',
            ),
            fc.string({ maxLength: 12 }),
          ),
          hostileValue,
          { maxKeys: 8 },
        ),
      }),
    })
    await fc.assert(
      fc.asyncProperty(request, async ({ id, data }) => {
        const body = JSON.stringify({ id, data: { endpoint: data.endpoint, ...data.params } })
        const answer = await post(adapter.url, body)
        count(answer)
        expect(
          acceptable(answer),
          `${answer.status} ${answer.text.slice(0, 300)} for ${body.slice(0, 300)}`,
        ).toBe(true)
        // A request can never make the adapter read another secret from the environment.
        expect(answer.text).not.toContain(FEED_KEY)
      }),
      { numRuns: RUNS },
    )
    await stillServes()
  }, 420_000)

  it('adapter: malformed bytes, oversized bodies and deep JSON are refused with a 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 200 }),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
        async (bytes, contentType) => {
          const answer = await post(adapter.url, bytes, contentType)
          count(answer)
          expect(
            answer.status >= 400 && answer.status < 500,
            `${answer.status} ${answer.text.slice(0, 200)}`,
          ).toBe(true)
        },
      ),
      { numRuns: Math.floor(RUNS / 2) },
    )
    const started = Date.now()
    const oversized = await post(
      adapter.url,
      JSON.stringify({
        id: '1',
        data: { endpoint: 'game-odds', homeTeam: 'x'.repeat(5 * 1024 * 1024) },
      }),
    )
    expect(oversized.status).toBe(413)
    const deepArray = await post(
      adapter.url,
      `{"id":"1","data":{"endpoint":"game-odds","homeTeam":${'['.repeat(200_000)}${']'.repeat(200_000)}}}`,
    )
    expect(deepArray.status, deepArray.text.slice(0, 200)).toBeGreaterThanOrEqual(400)
    expect(deepArray.status).toBeLessThan(500)
    const deepObject = await post(
      adapter.url,
      `{"id":"1","data":{"endpoint":"game-odds","homeTeam":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}}`,
    )
    expect(deepObject.status, deepObject.text.slice(0, 200)).toBeGreaterThanOrEqual(400)
    expect(deepObject.status).toBeLessThan(500)
    figures.limitsAnsweredMs = Date.now() - started
    figures.oversizedStatus = oversized.status
    figures.deepJsonStatuses = [deepArray.status, deepObject.status]
    await stillServes()
  }, 180_000)
})
