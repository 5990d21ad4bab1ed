import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { encode as cborEncode } from 'cbor-x'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../../src/adapter/workers.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { freePort } from '../../src/dev/ports.ts'
import { catalogEntries, getEndpoint } from '../../src/feeds/catalog/index.ts'
import { createFeedServer, type FeedServer } from '../../src/feeds/server/index.ts'
import { loadJobSpec, TaskError } from '../../src/pipeline/index.ts'
import { isRestrictedAddress } from '../../src/pipeline/tasks/http.ts'
import { runTask } from '../pipeline/support/task.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { recordFigures } from './support.ts'

const RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 1_000)
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
    recordFigures('hostile-input', { ...figures, adapterStatuses: statuses })
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

  it(`job spec loader: ${RUNS} mutated and random specs end in problems, never a crash`, async () => {
    const original = readFileSync(join(import.meta.dirname, '../../jobs/game-odds.toml'), 'utf8')
    const mutation = fc.array(
      fc.tuple(
        fc.nat(original.length),
        fc.nat(20),
        fc.string({
          maxLength: 8,
          unit: fc.constantFrom(
            '"',
            '\\',
            '[',
            ']',
            '{',
            '}',
            '=',
            '\n',
            '-',
            '>',
            '$',
            '(',
            ')',
            ';',
            'x',
            '0',
            '#',
            "'",
            '\u0000',
            'é',
          ),
        }),
      ),
      { minLength: 1, maxLength: 5 },
    )
    let withProblems = 0
    await fc.assert(
      fc.property(
        fc.oneof(
          mutation.map((edits) =>
            edits.reduce(
              (text, [at, remove, insert]) => text.slice(0, at) + insert + text.slice(at + remove),
              original,
            ),
          ),
          fc.string({ maxLength: 400 }),
        ),
        (text) => {
          const result = loadJobSpec(text, 'fuzz.toml')
          if (result.problems.length > 0) withProblems++
          expect(result.job !== undefined || result.problems.length > 0).toBe(true)
          for (const problem of result.problems)
            expect(typeof problem.message === 'string' && problem.message.length > 0).toBe(true)
        },
      ),
      { numRuns: RUNS },
    )
    figures.loaderInputs = RUNS
    figures.loaderWithProblems = withProblems
    // Size limits: a huge spec is refused quickly, with a problem that says so.
    const started = Date.now()
    const huge = loadJobSpec(original + `\n# ${'x'.repeat(2 * 1024 * 1024)}\n`, 'huge.toml')
    expect(huge.job).toBeUndefined()
    expect(huge.problems.map((problem) => problem.message).join(' ')).toMatch(
      /bytes|characters|large|size|limit/i,
    )
    const manyTasks = original.replace(
      'decode_log -> decode_cbor',
      `${Array.from({ length: 5_000 }, (_, index) => `t${index} [type="any"]`).join('\n')}\n decode_log -> decode_cbor`,
    )
    const many = loadJobSpec(manyTasks, 'many.toml')
    expect(many.job).toBeUndefined()
    expect(Date.now() - started).toBeLessThan(60_000) // a hang catcher: unbounded parsing never ends
  }, 300_000)

  it(`cborparse: ${RUNS} random and hostile buffers end in a TaskError; huge maps are refused`, async () => {
    const bufferOf = fc.oneof(
      fc.uint8Array({ maxLength: 400 }),
      fc
        .dictionary(
          fc.string({ maxLength: 10 }),
          fc.oneof(
            fc.string(),
            fc.integer(),
            fc.double(),
            fc.boolean(),
            fc.constant(null),
            fc.array(fc.integer(), { maxLength: 5 }),
          ),
          { maxKeys: 10 },
        )
        .map((object) => {
          const encoded = new Uint8Array(cborEncode(object))
          // The on-chain buffer is a map body without its header; cut the header off, sometimes badly.
          return encoded.subarray(1)
        }),
    )
    let errors = 0
    await fc.assert(
      fc.asyncProperty(bufferOf, fc.constantFrom('diet', 'standard'), async (bytes, mode) => {
        try {
          await runTask('cborparse', { mode }, { inputs: [bytes] })
        } catch (error) {
          errors++
          expect(error).toBeInstanceOf(TaskError)
          expect((error as Error).message.length).toBeGreaterThan(5)
        }
      }),
      { numRuns: RUNS },
    )
    figures.cborInputs = RUNS
    figures.cborErrors = errors
    const started = Date.now()
    // A map that claims 2^60 entries, and one with 20,000 real ones: refused, quickly.
    const claimsHuge = Uint8Array.from([
      0x61, 0x61, 0xbb, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x61, 0x62, 0x01,
    ])
    await expect(
      runTask('cborparse', { mode: 'standard' }, { inputs: [claimsHuge] }),
    ).rejects.toBeInstanceOf(TaskError)
    const entries: number[] = []
    for (let index = 0; index < 20_000; index++)
      entries.push(0x63, 0x6b, ((index >> 8) & 0x7f) | 0x20, (index & 0x7f) | 0x20, 0x01)
    await expect(runTask('cborparse', {}, { inputs: [Uint8Array.from(entries)] })).rejects.toThrow(
      /entries|keys|more than|limit/i,
    )
    expect(Date.now() - started).toBeLessThan(60_000) // a hang catcher: 2^60 entries never end
  }, 300_000)

  describe('http task: a URL from a request cannot reach loopback or private addresses', () => {
    let server: Server
    let hits = 0
    let port = 0
    beforeAll(async () => {
      server = createServer((_request, response) => {
        hits++
        response.end('reached')
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as AddressInfo).port
    })
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

    it('every spelling of loopback and private hosts is refused before a connection is made', async () => {
      const hosts = [
        '127.0.0.1',
        'localhost',
        'LOCALHOST.',
        '127.1',
        '0x7f000001',
        '2130706433',
        '0177.0.0.1',
        '0',
        '0.0.0.0',
        '[::1]',
        '[::ffff:127.0.0.1]',
        '[::ffff:7f00:1]',
        '[0:0:0:0:0:ffff:127.0.0.1]',
        '[::127.0.0.1]',
        '[64:ff9b::127.0.0.1]',
        '[2002:7f00:1::]',
        '10.0.0.1',
        '172.16.5.4',
        '192.168.1.1',
        '169.254.169.254',
        '100.64.0.1',
        '[fd00::1]',
        '[fe80::1]',
        'user:pass@127.0.0.1',
      ]
      const refused: string[] = []
      for (const host of hosts) {
        const url = `http://${host}:${port}/secret`
        try {
          await runTask('http', { method: 'GET', url: '$(req.url)' }, { vars: { req: { url } } })
        } catch (error) {
          expect(error, url).toBeInstanceOf(TaskError)
          expect((error as Error).message, url).toMatch(
            /private or loopback|cannot resolve|not a valid URL/,
          )
          refused.push(host)
        }
      }
      expect(hits).toBe(0)
      expect(refused).toEqual(hosts)
      // Addresses that embed an IPv4 address (IPv4-compatible, NAT64, 6to4) are judged by that address.
      for (const address of [
        '::7f00:1',
        '64:ff9b::7f00:1',
        '64:ff9b::a00:1',
        '2002:7f00:1::',
        '2002:c0a8:101::1',
      ])
        expect(isRestrictedAddress(address), address).toBe(true)
      expect(isRestrictedAddress('64:ff9b::808:808')).toBe(false)
      figures.ssrfSpellingsRefused = refused.length
    })
  })
})
