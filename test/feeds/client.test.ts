import type { ServerResponse } from 'node:http'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSettings, type Settings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { freePort } from '../../src/dev/ports.ts'
import { feedCatalog, FeedParamsError } from '../../src/feeds/catalog/index.ts'
import { fetchFeed } from '../../src/feeds/client.ts'
import type { FeedCall } from '../../src/feeds/server/index.ts'
import { UpstreamError } from '../../src/feeds/upstream-error.ts'
import { SignKeyError } from '../../src/signkey/index.ts'
import { startFeedService, TEST_KEY } from './support.ts'

const nodeKey = ANVIL_PRIVATE_KEYS[1]!
type Intercept = (call: FeedCall, response: ServerResponse) => Promise<boolean> | boolean
let intercept: Intercept | undefined
let service: Awaited<ReturnType<typeof startFeedService>>
let settings: Settings

function settingsFor(url: string, extra: Record<string, string> = {}): Settings {
  return parseSettings({
    SPORTS_URL: url,
    BLOCKCHAIN_URL: url,
    NFT_URL: url,
    WEATHER_URL: url,
    FEED_API_KEY: TEST_KEY,
    FETCH_TIMEOUT_MS: '2000',
    ...extra,
  })
}

beforeAll(async () => {
  service = await startFeedService({
    signers: [new Wallet(nodeKey).address],
    intercept: (call, response) => intercept?.(call, response) ?? false,
  })
  settings = settingsFor(service.url)
})
afterAll(async () => {
  await service?.stop()
})

const odds = feedCatalog['game-odds'].example
const mufc = { ...odds, key: '##signKey' }

async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(UpstreamError)
  return error as UpstreamError
}

describe('upstream client', () => {
  it('fetches, validates and returns the envelope and data (static key)', async () => {
    intercept = undefined
    const result = await fetchFeed('game-odds', mufc, { settings })
    expect(result.data).toMatchObject({
      homeTeamScore: 1,
      awayTeamScore: 0,
      homeMoneyLine: 1.6,
      drawMoneyLine: 4.2,
      awayMoneyLine: 5.25,
    })
    expect(result.envelope).toMatchObject({ status: 200, result: 'success', query: odds })
    expect(result.url).toContain('key=[redacted]')
    expect(JSON.stringify(result)).not.toContain(TEST_KEY)
  })

  it('sends a signed key in signed mode that the service accepts', async () => {
    const signed = settingsFor(service.url, { SIGNKEY_MODE: 'signed', NODE_PRIVATE_KEY: nodeKey })
    const result = await fetchFeed(
      'collection-floor-price',
      { ...feedCatalog['collection-floor-price'].example, key: '##signKey' },
      { settings: signed, requestId: '0x01' },
    )
    expect(result.data).toMatchObject({ floor_price: 48 })
  })

  it('normalises aliases to canonical names and keeps the originals', async () => {
    const player = await fetchFeed(
      'player-boxscores',
      { ...odds, player: 'Andre Onana' },
      { settings },
    )
    expect(player.data).toMatchObject({
      goalkeeperGoalAgainst: 0,
      goalkeeperGoalsAgainst: 0,
      penaltyKicksMisses: 0,
      penaltyKickMisses: 0,
    })
    const weather = await fetchFeed('weather', feedCatalog.weather.example, { settings })
    expect(weather.data.windGust).toBe(weather.data.windgust)
    const box = await fetchFeed('boxscores', odds, { settings })
    expect(box.data.periodResult).toEqual(box.data.periodResults)
  })

  it('refuses bad parameters before calling the service', async () => {
    const before = service.server.requestCount()
    await expect(
      fetchFeed('game-odds', { ...odds, date: '2024-02-31' }, { settings }),
    ).rejects.toThrow(FeedParamsError)
    await expect(fetchFeed('no-such-feed', {}, { settings })).rejects.toThrow(
      /parameter endpoint is not a feed endpoint/,
    )
    await expect(fetchFeed('game-odds', { ...odds, key: 'literal' }, { settings })).rejects.toThrow(
      SignKeyError,
    )
    expect(service.server.requestCount()).toBe(before)
  })

  it("reports the service's 404 with its words, not retryable", async () => {
    const error = await failure(
      fetchFeed('game-odds', { ...odds, date: '2024-08-18' }, { settings }),
    )
    expect(error).toMatchObject({
      problem: 'upstream-error',
      kind: 'upstream',
      httpStatus: 404,
      retryable: false,
    })
    expect(error.description).toContain('homeTeam Manchester United')
  })

  it('reports a refused key as 401 without the key', async () => {
    const wrong = settingsFor(service.url, { FEED_API_KEY: 'not-the-key-91b2' })
    const error = await failure(fetchFeed('game-odds', mufc, { settings: wrong }))
    expect(error).toMatchObject({ httpStatus: 401, kind: 'not_authorised', retryable: false })
    expect(`${error.message} ${error.stack}`).not.toContain('not-the-key-91b2')
  })

  it('treats 5xx, truncated bodies and timeouts as retryable', async () => {
    intercept = (_call, response) => {
      response.writeHead(503, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          status: 503,
          result: 'error',
          description: 'overloaded',
          time: new Date().toUTCString(),
          timestamp: Date.now(),
        }),
      )
      return true
    }
    expect(await failure(fetchFeed('game-odds', mufc, { settings }))).toMatchObject({
      problem: 'upstream-error',
      httpStatus: 503,
      retryable: true,
      description: 'overloaded',
    })
    intercept = async (call, response) => {
      const { body } = await call.answer()
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(body).slice(0, 40))
      return true
    }
    expect(await failure(fetchFeed('game-odds', mufc, { settings }))).toMatchObject({
      problem: 'invalid-json',
      retryable: true,
    })
    intercept = () => new Promise<boolean>(() => undefined)
    const started = Date.now()
    expect(await failure(fetchFeed('game-odds', mufc, { settings, timeoutMs: 300 }))).toMatchObject(
      { problem: 'timeout', kind: 'timeout', retryable: true },
    )
    // The intercept never answers: the bound only catches a hang, the kind proves the timeout fired.
    expect(Date.now() - started).toBeLessThan(30_000)
    intercept = undefined
  })

  it('ends a body that trickles a byte at a time at FETCH_TIMEOUT_MS, as a timeout', async () => {
    let dripping: NodeJS.Timeout | undefined
    intercept = (_call, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.write('{')
      dripping = setInterval(() => response.write(' '), 100)
      response.on('close', () => clearInterval(dripping))
      return true
    }
    try {
      const error = await failure(fetchFeed('game-odds', mufc, { settings, timeoutMs: 500 }))
      expect(error).toMatchObject({ problem: 'timeout', kind: 'timeout', retryable: true })
      expect(error.message).toContain('within 500 ms')
    } finally {
      clearInterval(dripping)
      intercept = undefined
    }
  })

  it('keeps the words of an error without the envelope, and refuses a success without one', async () => {
    intercept = (_call, response) => {
      response
        .writeHead(502, { 'content-type': 'application/json' })
        .end(JSON.stringify({ message: 'bad gateway upstream' }))
      return true
    }
    expect(await failure(fetchFeed('game-odds', mufc, { settings }))).toMatchObject({
      problem: 'upstream-error',
      httpStatus: 502,
      retryable: true,
      description: 'bad gateway upstream',
    })
    intercept = (_call, response) => {
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ result: 'success', data: {} }))
      return true
    }
    const error = await failure(fetchFeed('game-odds', mufc, { settings }))
    intercept = undefined
    expect(error).toMatchObject({ problem: 'bad-envelope', retryable: false })
    expect(error.description).toContain('status')
  })

  it('reports a drift in the data shape naming the field', async () => {
    intercept = async (call, response) => {
      const { body } = await call.answer()
      const data = body.data as Record<string, unknown>
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ...body, data: { ...data, homeMoneyLine: 'n/a' } }))
      return true
    }
    const error = await failure(fetchFeed('game-odds', mufc, { settings }))
    intercept = undefined
    expect(error).toMatchObject({
      problem: 'data-drift',
      field: 'data.homeMoneyLine',
      retryable: false,
    })
  })

  it('scrubs the key from whatever the service sends back', async () => {
    intercept = (call, response) => {
      const url = `${call.path}?key=${TEST_KEY}`
      response.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          status: 400,
          result: 'error',
          description: `bad request ${url}`,
          time: new Date().toUTCString(),
          timestamp: Date.now(),
        }),
      )
      return true
    }
    const error = await failure(fetchFeed('game-odds', mufc, { settings }))
    intercept = undefined
    expect(error.description).toContain('key=[redacted]')
    expect(error.description).not.toContain(TEST_KEY)
  })

  it("passes on a short excerpt of the service's words, the key cut out however it comes back", async () => {
    intercept = (_call, response) => {
      response.writeHead(401, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          status: 401,
          result: 'error',
          description: `key ${TEST_KEY.slice(0, 12).toUpperCase()}\n\u0000 refused; ${'words '.repeat(100)}`,
          time: new Date().toUTCString(),
          timestamp: Date.now(),
        }),
      )
      return true
    }
    const error = await failure(fetchFeed('game-odds', mufc, { settings }))
    intercept = undefined
    expect(error.description).toMatch(
      /^key \[redacted\] refused; words words .*\.\.\. \(\d+ characters\)$/,
    )
    expect(error.description.length).toBeLessThan(240)
  })

  it('refuses an oversized answer without reading it all', async () => {
    intercept = (_call, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      const chunk = 'x'.repeat(64 * 1024)
      let sent = 0
      const pump = () => {
        while (sent < 64 && response.write(chunk)) sent++
        if (sent < 64) response.once('drain', pump)
        else response.end()
      }
      response.on('error', () => undefined)
      pump()
      return true
    }
    const error = await failure(fetchFeed('game-odds', mufc, { settings }))
    intercept = undefined
    expect(error).toMatchObject({ problem: 'bad-envelope', retryable: false })
    expect(error.description).toContain(
      `more than ${settings.FETCH_MAX_RESPONSE_BYTES} bytes (FETCH_MAX_RESPONSE_BYTES)`,
    )
  })

  it('refuses an answer nested deeper than JSON_MAX_DEPTH before parsing it', async () => {
    intercept = (_call, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(`{"data":${'['.repeat(100_000)}${']'.repeat(100_000)}}`)
      return true
    }
    const error = await failure(fetchFeed('game-odds', mufc, { settings }))
    intercept = undefined
    expect(error).toMatchObject({ problem: 'bad-envelope', retryable: false })
    expect(error.description).toContain('nested deeper than 64 levels (JSON_MAX_DEPTH)')
  })

  it('refuses an answer that would build more than DECODE_MAX_NODES values before parsing it', async () => {
    // 2 MiB less a little of empty arrays: 700,000 values, every one an object of V8's.
    const wide = `[${'[],'.repeat(699_000)}[]]`
    intercept = (_call, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(`{"data":${wide}}`)
      return true
    }
    const error = await failure(fetchFeed('game-odds', mufc, { settings }))
    intercept = undefined
    expect(error).toMatchObject({ problem: 'bad-envelope', retryable: false })
    expect(error.description).toBe(
      "the feed service's answer would build more than 100000 values (DECODE_MAX_NODES); it was refused before they were built",
    )
  })

  it('reports an unreachable service as a retryable network error', async () => {
    const closed = settingsFor(`http://127.0.0.1:${await freePort()}`)
    const error = await failure(fetchFeed('game-odds', mufc, { settings: closed }))
    expect(error).toMatchObject({ problem: 'network', kind: 'unavailable', retryable: true })
    expect(error.message).not.toContain(TEST_KEY)
  })
})
