import { describe, expect, it } from 'vitest'
import { errorEnvelopeSchema, feedCatalog } from '../../src/feeds/catalog/index.ts'
import { TEST_KEY, useFeedService } from './support.ts'

// Parameters are checked before any family answers, and an unknown blockchain id is a 404 whatever
// the service serves: these errors need no chain.
const service = useFeedService()
const call = service.call

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
    const unknown = await fetch(`${service.url}/api/v1/nothing?key=${TEST_KEY}`)
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ status: 404, result: 'error' })
  })

  it('refuses a parameter given twice', async () => {
    const response = await fetch(
      `${service.url}/api/v1/collection-floor-price?collection_contract_address=0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d&collection_contract_address=0x1&key=${TEST_KEY}`,
    )
    expect(response.status).toBe(400)
    expect(((await response.json()) as { description: string }).description).toContain(
      'parameter collection_contract_address is given more than once',
    )
  })
})
