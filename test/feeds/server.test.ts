import { readFileSync } from 'node:fs'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import {
  catalogEntries,
  errorEnvelopeSchema,
  feedCatalog,
  getEndpoint,
  successEnvelopeSchema,
  type CatalogEntry,
} from '../../src/feeds/catalog/index.ts'
import { loadDataSet } from '../../src/feeds/server/data/index.ts'
import { createFeedServer } from '../../src/feeds/server/index.ts'
import { createSignKey } from '../../src/signkey/index.ts'
import { get, startFeedService, TEST_KEY } from './support.ts'

const node = new Wallet(ANVIL_PRIVATE_KEYS[1]!)
let service: Awaited<ReturnType<typeof startFeedService>>
let base = ''

beforeAll(async () => {
  service = await startFeedService({ withChain: true, signers: [node.address] })
  base = service.url
})
afterAll(async () => {
  await service?.stop()
})

/** `key: null` sends no key at all. */
const call = (endpoint: string, params: Record<string, string>, key: string | null = TEST_KEY) =>
  get(base, getEndpoint(endpoint).path, { ...params, ...(key !== null ? { key } : {}) })

/** Example parameters each endpoint can answer here (blockchain balance on the dev chain). */
function answerableExample(entry: CatalogEntry): Record<string, string> {
  if (entry.name === 'account-balance')
    return { blockchain: 'local', address: new Wallet(ANVIL_PRIVATE_KEYS[0]!).address }
  return { ...entry.example }
}

function expectValid(entry: CatalogEntry, body: unknown): void {
  const parsed = successEnvelopeSchema(entry).safeParse(body)
  expect(parsed.success, `${entry.name}: ${JSON.stringify(parsed.error?.issues[0])}`).toBe(true)
}

describe('local Data Feed Query Service: envelopes', () => {
  it.each(catalogEntries.map((entry) => [entry.name, entry] as const))(
    '%s answers a valid envelope',
    async (_name, entry) => {
      const params = answerableExample(entry)
      const { status, body } = await call(entry.name, params)
      expect(status).toBe(200)
      expectValid(entry, body)
      expect(body.query).toEqual(params)
      expect(new Date(body.time as string).getTime()).toBe(
        Math.floor((body.timestamp as number) / 1000) * 1000,
      )
    },
  )

  it.each((feedCatalog.weather.variants ?? []).map((variant) => [variant.name, variant] as const))(
    'weather %s answers a valid envelope',
    async (_name, variant) => {
      const { status, body } = await call('weather', variant.example)
      expect(status).toBe(200)
      expectValid(feedCatalog.weather, body)
      const data = body.data as Record<string, unknown>
      expect(data.unitOfMeasure).toBe(variant.example.unitOfMeasure)
      for (const [camel, lower] of [
        ['windGust', 'windgust'],
        ['windDir', 'winddir'],
        ['windSpeed', 'windspeed'],
        ['solarRadiation', 'solarradiation'],
        ['solarEnergy', 'solarenergy'],
        ['uvIndex', 'uvindex'],
      ]) {
        expect(data[lower!], lower).toBe(data[camel!])
      }
    },
  )
})

describe('local Data Feed Query Service: the data set', () => {
  const mufc = {
    region: 'england',
    sport: 'soccer',
    league: 'epl',
    date: '2024-08-16',
    homeTeam: 'Manchester United',
  }

  it('answers Manchester United v Fulham 2024-08-16 with the real score and odds', async () => {
    const odds = (await call('game-odds', mufc)).body
    expect(odds.data).toEqual({
      startTime: Date.parse('2024-08-16T19:00:00Z') / 1000,
      status: 3,
      homeTeamName: 'Manchester United',
      awayTeamName: 'Fulham',
      homeTeamScore: 1,
      awayTeamScore: 0,
      homeMoneyLine: 1.6,
      drawMoneyLine: 4.2,
      awayMoneyLine: 5.25,
    })
    const box = (await call('boxscores', mufc)).body.data as Record<string, unknown>
    expect(box).toMatchObject({
      sideAName: 'Manchester United',
      sideBName: 'Fulham',
      sideAScore: 1,
      sideBScore: 0,
    })
    expect(box.periodResults).toEqual({
      firstPeriod: { period: 'first half', sideAScore: 0, sideBScore: 0 },
      secondPeriod: { period: 'second half', sideAScore: 1, sideBScore: 0 },
    })
  })

  it.each(['manchester united', 'MAN UNITED', 'manchester+united', ' Man  United '])(
    'matches homeTeam %j',
    async (homeTeam) => {
      const { status, body } = await call('game-odds', { ...mufc, homeTeam })
      expect(status).toBe(200)
      expect((body.data as Record<string, unknown>).homeTeamName).toBe('Manchester United')
      expect((body.query as Record<string, string>).homeTeam).toBe(homeTeam)
    },
  )

  it('ships the whole reference: 10 EPL matches with 62 player lines, 5 NBA games, 8 collections, 8 cities', () => {
    const data = loadDataSet()
    expect(data.games.filter((game) => game.league === 'epl')).toHaveLength(10)
    expect(data.games.filter((game) => game.league === 'nba')).toHaveLength(5)
    expect(data.games.reduce((sum, game) => sum + game.players.length, 0)).toBe(62)
    expect(data.collections).toHaveLength(8)
    expect(data.cities).toHaveLength(8)
    for (const game of data.games) expect(Object.keys(game.provenance).length).toBeGreaterThan(0)
  })

  it('serves every game, with its real result, under full and short names', async () => {
    for (const game of loadDataSet().games) {
      for (const homeTeam of [game.homeTeam, game.homeTeamShort]) {
        const { status, body } = await call('game-odds', {
          region: 'usa',
          sport: game.sport,
          league: game.league,
          date: game.date,
          homeTeam,
        })
        expect(status, `${game.id} ${homeTeam}`).toBe(200)
        expect(body.data).toMatchObject({
          homeTeamScore: game.homeTeamScore,
          awayTeamScore: game.awayTeamScore,
          homeMoneyLine: game.odds.homeMoneyLine,
          status: 3,
        })
      }
    }
    const nba = (
      await call('game-odds', {
        region: 'usa',
        sport: 'basketball',
        league: 'nba',
        date: '2024-10-22',
        homeTeam: 'Celtics',
      })
    ).body.data
    expect(nba).toMatchObject({ homeTeamScore: 132, awayTeamScore: 109, drawMoneyLine: null })
  })

  it('uses the sample spellings for player statistics and real player lines', async () => {
    const keeper = (await call('player-boxscores', { ...mufc, player: 'Bernd Leno' })).body
      .data as Record<string, unknown>
    expect(keeper).toMatchObject({
      name: 'Bernd Leno',
      teamName: 'Fulham',
      minutes: 90,
      goalkeeperSaves: 4,
      goalkeeperGoalsAgainst: 1,
    })
    expect(keeper).toHaveProperty('penaltyKickGoals')
    expect(keeper).not.toHaveProperty('goalkeeperGoalAgainst')
    const scorer = (await call('player-boxscores', { ...mufc, player: 'zirkzee' })).body.data
    expect(scorer).toMatchObject({ name: 'Joshua Zirkzee', minutes: 29, goals: 1, shots: null })
    const accented = (await call('player-boxscores', { ...mufc, player: 'andre onana' })).body.data
    expect(accented).toMatchObject({ name: 'André Onana', goalkeeperGoalsAgainst: 0 })
  })

  it('answers NFT floor prices and the real asset contract', async () => {
    const floor = (
      await call('collection-floor-price', {
        collection_contract_address: '0xBC4CA0EDA7647A8AB7C2061C2E118A18A936F13D',
      })
    ).body.data
    expect(floor).toEqual({ collection_name: 'Bored Ape Yacht Club', floor_price: 48 })
    const asset = (
      await call('asset-floor-price', {
        asset_contract_address: '0xb932a70a57673d89f4acffbe830e8ed7f75fb9e0',
        token_id: '1',
      })
    ).body.data
    expect(asset).toEqual({
      name: 'Golf',
      creator: 'RivenRibbon',
      collection_name: 'SuperRare',
      collection_slug: 'superrare',
      collection_floor_price: 0,
    })
    const sample = JSON.parse(
      readFileSync(new URL('./fixtures/gora_nft_asset_contract.json', import.meta.url), 'utf8'),
    )
    expect(
      (
        await call('asset-contract', {
          asset_contract_address: '0xb932a70a57673d89f4acffbe830e8ed7f75fb9e0',
        })
      ).body.data,
    ).toEqual(sample)
  })

  it('derives weather deterministically, imperial from metric, within the ranges', async () => {
    const query = {
      area: 'london',
      state: 'ENGLAND',
      country: 'United+Kingdom',
      dateTime: '2024-07-06T15:00:00',
    }
    const first = (await call('weather', { ...query, unitOfMeasure: 'metric' })).body
      .data as Record<string, number>
    const again = (await call('weather', { ...query, unitOfMeasure: 'metric' })).body.data
    expect(again).toEqual(first)
    const imperial = (await call('weather', { ...query, unitOfMeasure: 'imperial' })).body
      .data as Record<string, number>
    expect(imperial.temperature).toBeCloseTo(first.temperature! * 1.8 + 32, 0)
    expect(imperial.windSpeed).toBeCloseTo(first.windSpeed! / 1.609344, 0)
    expect(imperial.pressure).toBe(first.pressure)
    const other = (await call('weather', { ...query, dateTime: '2024-07-07T15:00:00' })).body.data
    expect(other).not.toEqual(first)
    const morning = (await call('weather', { ...query, dateTime: '2024-07-06T09:00:00' })).body
      .data as Record<string, number>
    expect([morning.high, morning.low]).toEqual([first.high, first.low])
    expect(morning.solarRadiation).not.toBe(first.solarRadiation)
    // Sun times from the sunrise equation agree with Visual Crossing's London record of that day.
    const vc = JSON.parse(
      readFileSync(
        new URL('./fixtures/visualcrossing_timeline_london_us_units.json', import.meta.url),
        'utf8',
      ),
    ).days[0]
    expect(Math.abs(first.sunrise! - vc.sunriseEpoch)).toBeLessThan(120)
    expect(Math.abs(first.sunset! - vc.sunsetEpoch)).toBeLessThan(120)
  })

  it('keeps every generated reading within the ranges of the data set', async () => {
    for (const city of loadDataSet().cities) {
      for (const month of ['01', '04', '07', '10']) {
        const data = (
          await call('weather', {
            area: city.area,
            state: city.state,
            country: city.country,
            dateTime: `2025-${month}-15T13:00:00`,
          })
        ).body.data as Record<string, number>
        expect(data.temperature).toBeGreaterThanOrEqual(-10)
        expect(data.temperature).toBeLessThanOrEqual(40)
        expect(Math.abs(data.feelsLike! - data.temperature!)).toBeLessThanOrEqual(5)
        expect(data.low).toBeLessThanOrEqual(data.temperature!)
        expect(data.high).toBeGreaterThanOrEqual(data.temperature!)
        expect(data.windGust).toBeGreaterThanOrEqual(data.windSpeed!)
        expect(data.windGust).toBeLessThanOrEqual(120)
        expect(data.humidity).toBeGreaterThanOrEqual(10)
        expect(data.pressure).toBeGreaterThanOrEqual(980)
        expect(data.pressure).toBeLessThanOrEqual(1040)
        expect(data.uvIndex).toBeLessThanOrEqual(10)
        expect(data.sunset).toBeGreaterThan(data.sunrise!)
      }
    }
  })
})

describe('local Data Feed Query Service: errors', () => {
  const mufc = feedCatalog['game-odds'].example
  const bad: Array<[string, string, Record<string, string>, string]> = [
    ['game-odds', 'region', { ...mufc, region: 'mars' }, 'parameter region must be one of'],
    ['game-odds', 'sport', { ...mufc, sport: 'curling' }, 'parameter sport must be one of'],
    ['game-odds', 'league', { ...mufc, league: 'e-p-l' }, 'parameter league must be a code'],
    [
      'boxscores',
      'date',
      { ...mufc, date: '2024-8-16' },
      'parameter date must be a date in the form YYYY-MM-DD',
    ],
    [
      'boxscores',
      'date',
      { ...mufc, date: '2023-02-29' },
      'parameter date must be a real calendar date',
    ],
    ['player-boxscores', 'player', { ...mufc }, 'parameter player is required'],
    ['game-odds', 'homeTeam', { ...mufc, homeTeam: '' }, 'parameter homeTeam is required'],
    [
      'account-balance',
      'address',
      { blockchain: 'local', address: '0x123' },
      'parameter address must be a 0x-prefixed address of 40 hex digits',
    ],
    [
      'account-balance',
      'blockchain',
      { address: '0x06012c8cf97bead5deae237070f9587f8e7a266d' },
      'parameter blockchain is required',
    ],
    [
      'transaction',
      'hash',
      { blockchain: 'local', hash: '0x1234' },
      'parameter hash must be a 0x-prefixed transaction hash of 64 hex digits',
    ],
    [
      'token-transfers',
      'hash',
      { blockchain: 'local', hash: `0x${'z'.repeat(64)}` },
      'parameter hash must be a 0x-prefixed transaction hash',
    ],
    [
      'asset-floor-price',
      'token_id',
      { asset_contract_address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d', token_id: '-1' },
      'parameter token_id must be a non-negative integer',
    ],
    [
      'asset-contract',
      'asset_contract_address',
      { asset_contract_address: 'bc4ca0eda7647a8ab7c2061c2e118a18a936f13d' },
      'parameter asset_contract_address must be a 0x-prefixed address',
    ],
    [
      'collection-floor-price',
      'collection_contract_address',
      {},
      'parameter collection_contract_address is required',
    ],
    [
      'weather',
      'unitOfMeasure',
      { area: 'Ruiru', state: 'Kiambu', country: 'Kenya', unitOfMeasure: 'si' },
      'parameter unitOfMeasure must be one of: metric, imperial',
    ],
    [
      'weather',
      'dateTime',
      { area: 'Ruiru', state: 'Kiambu', country: 'Kenya', dateTime: '2024-08-16 19:00:00' },
      'parameter dateTime must be a date and time in the form YYYY-MM-DDTHH:mm:ss',
    ],
    [
      'weather',
      'dateTime',
      { area: 'Ruiru', state: 'Kiambu', country: 'Kenya', dateTime: '2024-13-16T19:00:00' },
      'parameter dateTime must be a real calendar date',
    ],
    [
      'weather',
      'latitude',
      { latitude: '-90.5', longitude: '10', dateTime: '2024-08-16T19:00:00' },
      'parameter latitude must be between -90 and 90',
    ],
    [
      'weather',
      'longitude',
      { latitude: '10', longitude: '181', dateTime: '2024-08-16T19:00:00' },
      'parameter longitude must be between -180 and 180',
    ],
    [
      'weather',
      'latitude',
      {
        area: 'Madrid',
        state: 'Madrid',
        country: 'Spain',
        latitude: '40.4',
        longitude: '-3.7',
        dateTime: '2024-08-16T19:00:00',
      },
      'parameter latitude is ambiguous',
    ],
    [
      'weather',
      'dateTime',
      { latitude: '40.4', longitude: '-3.7' },
      'parameter dateTime is required for a forecast by latitude/longitude',
    ],
    ['weather', 'area', { state: 'Kiambu', country: 'Kenya' }, 'parameter area is required'],
  ]
  it.each(bad)(
    '%s: a bad %s gets a 400 naming it',
    async (endpoint, _param, params, description) => {
      const { status, body } = await call(endpoint, params)
      expect(status).toBe(400)
      expect(errorEnvelopeSchema.safeParse(body).success).toBe(true)
      expect(body.status).toBe(400)
      expect(body.description).toContain(description)
    },
  )

  it('answers 401 for a missing or wrong key and never echoes it', async () => {
    const missing = await call('game-odds', mufc, null)
    expect(missing.status).toBe(401)
    expect(missing.body).toMatchObject({
      status: 401,
      result: 'error',
      description: 'parameter key is required',
    })
    const wrongKey = 'wrong-key-5d1e0b'
    const wrong = await call('game-odds', mufc, wrongKey)
    expect(wrong.status).toBe(401)
    expect(wrong.body.description).toBe('parameter key is not valid')
    expect(JSON.stringify(wrong.body)).not.toContain(wrongKey)
    expect(wrong.body.query).toEqual(mufc)
    const ok = await call('game-odds', mufc)
    expect(JSON.stringify(ok.body)).not.toContain(TEST_KEY)
  })

  it('answers 404 for an unknown game, collection, address, chain or path', async () => {
    expect((await call('game-odds', { ...mufc, date: '2024-08-17' })).body).toMatchObject({
      status: 404,
      result: 'error',
      description: expect.stringContaining('homeTeam Manchester United'),
    })
    expect(
      (await call('collection-floor-price', { collection_contract_address: `0x${'1'.repeat(40)}` }))
        .status,
    ).toBe(404)
    expect(
      (await call('weather', { area: 'Atlantis', state: 'Sea', country: 'Ocean' })).body
        .description,
    ).toContain('area Atlantis')
    expect(
      (await call('transaction', { blockchain: 'nochain', hash: `0x${'1'.repeat(64)}` })).status,
    ).toBe(404)
    const unknown = await fetch(`${base}/api/v1/nothing?key=${TEST_KEY}`)
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ status: 404, result: 'error' })
  })

  it('refuses a parameter given twice', async () => {
    const response = await fetch(
      `${base}/api/v1/collection-floor-price?collection_contract_address=0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d&collection_contract_address=0x1&key=${TEST_KEY}`,
    )
    expect(response.status).toBe(400)
    expect(((await response.json()) as { description: string }).description).toContain(
      'parameter collection_contract_address is given more than once',
    )
  })
})

describe('local Data Feed Query Service: signed keys and counters', () => {
  const params = { collection_contract_address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d' }
  const sign = (overrides: Partial<Parameters<typeof createSignKey>[0]> = {}) =>
    createSignKey({
      privateKey: node.privateKey,
      requestId: 'r1',
      endpoint: 'collection-floor-price',
      params,
      ttlSeconds: 60,
      ...overrides,
    })

  it('accepts a signed key of an accepted node for its own request', async () => {
    const { status, body } = await call('collection-floor-price', params, await sign())
    expect(status).toBe(200)
    expect(body.data).toMatchObject({ floor_price: 48 })
  })

  it('accepts a signed key once: a captured key cannot be replayed', async () => {
    const signed = await sign({ requestId: 'r-once' })
    expect((await call('collection-floor-price', params, signed)).status).toBe(200)
    const replay = await call('collection-floor-price', params, signed)
    expect(replay.body).toMatchObject({
      status: 401,
      description: 'parameter key is not valid: signed key was already used',
    })
  })

  it('refuses signed keys for other parameters, expired, or from another node', async () => {
    const replayed = await call(
      'collection-floor-price',
      { collection_contract_address: '0x60e4d786628fea6478f785a6d7e704777c86a7c6' },
      await sign(),
    )
    expect(replayed.status).toBe(401)
    expect(replayed.body.description).toContain('issued for other parameters')
    const expired = await call(
      'collection-floor-price',
      params,
      await sign({ now: Date.now() - 120_000 }),
    )
    expect(expired.body).toMatchObject({
      status: 401,
      description: 'parameter key is not valid: signed key has expired',
    })
    const stranger = await call(
      'collection-floor-price',
      params,
      await sign({ privateKey: ANVIL_PRIVATE_KEYS[3]! }),
    )
    expect(stranger.status).toBe(401)
    expect(stranger.body.description).toContain('is not an accepted node')
  })

  it('counts requests per route and serves the counts at /_stats', async () => {
    const path = feedCatalog['asset-contract'].path
    const before = service.server.requestCount(path)
    await call('asset-contract', feedCatalog['asset-contract'].example)
    await call('asset-contract', { asset_contract_address: 'bad' })
    expect(service.server.requestCount(path)).toBe(before + 2)
    const stats = (await (await fetch(`${base}/_stats`)).json()) as {
      requests: Record<string, number>
    }
    expect(stats.requests[path]).toBe(before + 2)
  })
})

describe('local Data Feed Query Service: current weather', () => {
  it('gives every node the same current weather within an hour, and new weather the next hour', async () => {
    const hour = Date.UTC(2025, 6, 1, 10)
    const answers: unknown[] = []
    for (const now of [hour + 60_000, hour + 3_500_000, hour + 3_700_000]) {
      const server = createFeedServer({ keys: [TEST_KEY], now: () => now })
      const url = await server.listen(0)
      answers.push(
        (
          await get(url, feedCatalog.weather.path, {
            ...feedCatalog.weather.example,
            key: TEST_KEY,
          })
        ).body.data,
      )
      await server.close()
    }
    expect(answers[1]).toEqual(answers[0])
    expect(answers[2]).not.toEqual(answers[0])
  })

  it('refuses to start without any key or signer', () => {
    expect(() => createFeedServer({})).toThrow(/at least one key/)
  })
})
