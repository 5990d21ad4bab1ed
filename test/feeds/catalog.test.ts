import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  ENDPOINT_NAMES,
  FeedDataError,
  catalogEntries,
  feedCatalog,
  getEndpoint,
  normaliseData,
  paramsSchema,
  parseFeedData,
  validateParams,
  weatherVariant,
} from '../../src/feeds/catalog/index.ts'

const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'))

describe('feed catalog', () => {
  it('has one entry per adapter endpoint, each with a family path and described params', () => {
    expect(Object.keys(feedCatalog).sort()).toEqual([...ENDPOINT_NAMES].sort())
    for (const entry of catalogEntries) {
      expect(entry.path).toMatch(entry.family === 'sports' ? /^\/api\/v4\// : /^\/api\/v1\//)
      for (const [name, spec] of Object.entries(entry.params)) {
        expect(spec.name).toBe(name)
        expect(spec.description.length).toBeGreaterThan(3)
        expect(spec.schema.safeParse(spec.example).success, `${entry.name}.${name} example`).toBe(
          true,
        )
      }
      expect(validateParams(entry, entry.example).ok, `${entry.name} example`).toBe(true)
      for (const name of entry.identity) expect(Object.keys(entry.params)).toContain(name)
    }
  })

  it('accepts every weather variant example and tells the variants apart', () => {
    const weather = getEndpoint('weather')
    for (const variant of weather.variants ?? []) {
      const result = validateParams(weather, variant.example)
      expect(result.ok, variant.name).toBe(true)
      if (result.ok) expect(weatherVariant(result.params)).toBe(variant.name)
    }
  })

  it('normalises enum case, addresses and defaults unitOfMeasure to metric', () => {
    const odds = validateParams(getEndpoint('game-odds'), {
      region: 'USA',
      sport: 'American+Football',
      league: 'NFL',
      date: '2024-09-08',
      homeTeam: 'x',
    })
    expect(odds).toMatchObject({
      ok: true,
      params: { region: 'usa', sport: 'american football', league: 'nfl' },
    })
    const weather = validateParams(getEndpoint('weather'), {
      area: 'Ruiru',
      state: 'Kiambu',
      country: 'Kenya',
    })
    expect(weather).toMatchObject({ ok: true, params: { unitOfMeasure: 'metric' } })
    const nft = validateParams(getEndpoint('asset-contract'), {
      asset_contract_address: '0xBC4CA0EDA7647A8AB7C2061C2E118A18A936F13D',
    })
    expect(nft).toMatchObject({
      ok: true,
      params: { asset_contract_address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d' },
    })
    expect(
      validateParams(getEndpoint('asset-floor-price'), {
        asset_contract_address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d',
        token_id: 7,
      }),
    ).toMatchObject({
      ok: true,
      params: { token_id: '7' },
    })
  })

  const odds = feedCatalog['game-odds'].example
  const rejections: Array<[string, string, Record<string, unknown>, RegExp]> = [
    [
      'region outside the list',
      'game-odds',
      { ...odds, region: 'mars' },
      /parameter region must be one of/,
    ],
    [
      'sport outside the list',
      'boxscores',
      { ...odds, sport: 'cricket' },
      /parameter sport must be one of: soccer, basketball, american football/,
    ],
    [
      'date in the wrong form',
      'game-odds',
      { ...odds, date: '16/08/2024' },
      /parameter date must be a date in the form YYYY-MM-DD/,
    ],
    [
      'date not in the calendar',
      'game-odds',
      { ...odds, date: '2024-02-30' },
      /parameter date must be a real calendar date/,
    ],
    [
      'missing homeTeam',
      'game-odds',
      { ...odds, homeTeam: undefined },
      /parameter homeTeam is required/,
    ],
    ['missing player', 'player-boxscores', odds, /parameter player is required/],
    [
      'league with symbols',
      'game-odds',
      { ...odds, league: 'e p l!' },
      /parameter league must be a code/,
    ],
    [
      'short address',
      'account-balance',
      { blockchain: 'local', address: '0x1234' },
      /parameter address must be a 0x-prefixed address of 40 hex digits/,
    ],
    [
      'bad chain id',
      'account-balance',
      { blockchain: 'eth mainnet', address: '0x06012c8cf97bead5deae237070f9587f8e7a266d' },
      /parameter blockchain must be a chain identifier/,
    ],
    [
      'short hash',
      'transaction',
      { blockchain: 'local', hash: '0xabc' },
      /parameter hash must be a 0x-prefixed transaction hash of 64 hex digits/,
    ],
    [
      'non-hex hash',
      'token-transfers',
      { blockchain: 'local', hash: `0x${'g'.repeat(64)}` },
      /parameter hash must be/,
    ],
    [
      'token id not a number',
      'asset-floor-price',
      { asset_contract_address: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d', token_id: 'one' },
      /parameter token_id must be a non-negative integer/,
    ],
    [
      'collection address missing',
      'collection-floor-price',
      {},
      /parameter collection_contract_address is required/,
    ],
    [
      'unit outside the list',
      'weather',
      { area: 'a', state: 'b', country: 'c', unitOfMeasure: 'kelvin' },
      /parameter unitOfMeasure must be one of: metric, imperial/,
    ],
    [
      'dateTime without seconds',
      'weather',
      { area: 'a', state: 'b', country: 'c', dateTime: '2024-08-16T19:00' },
      /parameter dateTime must be a date and time in the form YYYY-MM-DDTHH:mm:ss/,
    ],
    [
      'dateTime at hour 25',
      'weather',
      { area: 'a', state: 'b', country: 'c', dateTime: '2024-08-16T25:00:00' },
      /parameter dateTime must be a real calendar date and time/,
    ],
    [
      'latitude out of range',
      'weather',
      { latitude: '91', longitude: '0', dateTime: '2024-08-16T19:00:00' },
      /parameter latitude must be between -90 and 90/,
    ],
    [
      'longitude out of range',
      'weather',
      { latitude: '0', longitude: '-180.5', dateTime: '2024-08-16T19:00:00' },
      /parameter longitude must be between -180 and 180/,
    ],
    [
      'longitude not a number',
      'weather',
      { latitude: '0', longitude: 'east', dateTime: '2024-08-16T19:00:00' },
      /parameter longitude must be a decimal number/,
    ],
    [
      'address and coordinates',
      'weather',
      {
        area: 'Madrid',
        state: 'Madrid',
        country: 'Spain',
        latitude: '40.4',
        longitude: '-3.7',
        dateTime: '2024-08-16T19:00:00',
      },
      /parameter latitude is ambiguous together with area, state, country/,
    ],
    [
      'coordinates without dateTime',
      'weather',
      { latitude: '40.4', longitude: '-3.7' },
      /parameter dateTime is required for a forecast by latitude\/longitude/,
    ],
    [
      'latitude without longitude',
      'weather',
      { latitude: '40.4', dateTime: '2024-08-16T19:00:00' },
      /parameter longitude is required/,
    ],
    [
      'address without country',
      'weather',
      { area: 'Madrid', state: 'Madrid' },
      /parameter country is required/,
    ],
    [
      'a value that is an object',
      'game-odds',
      { ...odds, homeTeam: { a: 1 } },
      /parameter homeTeam must be a string \(got object\)/,
    ],
  ]
  it.each(rejections)('rejects %s, naming the parameter', (_label, endpoint, params, message) => {
    const result = validateParams(getEndpoint(endpoint), params)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.message).toMatch(message)
  })

  it('offers the rules as one zod schema per endpoint', () => {
    const schema = paramsSchema(getEndpoint('weather'))
    expect(
      schema.parse({ area: 'Ruiru', state: 'Kiambu', country: 'Kenya', key: '##signKey' }),
    ).toEqual({ area: 'Ruiru', state: 'Kiambu', country: 'Kenya', unitOfMeasure: 'metric' })
    const failed = schema.safeParse({
      latitude: '95',
      longitude: '0',
      dateTime: '2024-08-16T19:00:00',
    })
    expect(failed.success).toBe(false)
    expect(failed.error?.issues[0]).toMatchObject({
      path: ['latitude'],
      message: expect.stringContaining('parameter latitude must be between -90 and 90'),
    })
  })

  it("validates the service's own sample payloads", () => {
    const samples: Array<[string, string]> = [
      ['game-odds', 'gora_game_odds.json'],
      ['token-transfers', 'gora_blockchain_token_transfers.json'],
      ['transaction', 'gora_blockchain_transaction.json'],
      ['asset-contract', 'gora_nft_asset_contract.json'],
      ['asset-contract', 'opensea_v1_asset_contract_cryptokitties.json'],
      ['asset-floor-price', 'gora_nft_asset_floor_price.json'],
      ['collection-floor-price', 'gora_nft_collection_floor_price.json'],
    ]
    for (const [endpoint, file] of samples) {
      expect(() => parseFeedData(getEndpoint(endpoint), fixture(file)), file).not.toThrow()
    }
  })

  it('adds canonical names for aliased fields and keeps the originals', () => {
    const normalised = normaliseData(getEndpoint('weather'), {
      windgust: 12.5,
      windSpeed: 3,
      windspeed: 3,
    })
    expect(normalised).toMatchObject({ windGust: 12.5, windgust: 12.5, windSpeed: 3, windspeed: 3 })
    const player = normaliseData(getEndpoint('player-boxscores'), {
      goalkeeperGoalsAgainst: 1,
      penaltyKickGoals: 0,
      penaltyKickMisses: null,
    })
    expect(player).toMatchObject({
      goalkeeperGoalAgainst: 1,
      goalkeeperGoalsAgainst: 1,
      penaltyKicksGoals: 0,
      penaltyKicksMisses: null,
    })
    const contract = normaliseData(
      getEndpoint('asset-contract'),
      fixture('gora_nft_asset_contract.json'),
    )
    expect(contract.marketplace_seller_fee_basis_points).toBe(250)
    expect(
      normaliseData(getEndpoint('boxscores'), { periodResults: { firstPeriod: {} } }).periodResult,
    ).toEqual({ firstPeriod: {} })
  })

  it('reports a drift in the data shape naming the field', () => {
    const sample = fixture('gora_game_odds.json')
    expect(() =>
      parseFeedData(getEndpoint('game-odds'), { ...sample, homeMoneyLine: '1.44x' }),
    ).toThrow(/data\.homeMoneyLine/)
    expect(() =>
      parseFeedData(getEndpoint('game-odds'), { ...sample, homeMoneyLine: undefined }),
    ).toThrow(FeedDataError)
    expect(() =>
      parseFeedData(getEndpoint('transaction'), {
        ...fixture('gora_blockchain_transaction.json'),
        from: [{ adress: '0x' }],
      }),
    ).toThrow(/data\.from\.0\.address/)
    expect(() => parseFeedData(getEndpoint('weather'), [])).toThrow(/data must be an object/)
  })
})
