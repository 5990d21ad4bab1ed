import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { settingsSchema } from '../../src/config/settings.ts'
import { catalogEntries, getEndpoint } from '../../src/feeds/catalog/index.ts'
import { feedUrl } from '../../src/feeds/client.ts'
import { loadDataSet } from '../../src/feeds/server/data/index.ts'
import { nestingBeyond } from '../../src/net/bounded-body.ts'
import { NodeBudget } from '../../src/net/decode-budget.ts'
import { createFeedServer, type FeedServer } from '../../src/feeds/server/index.ts'

/**
 * What the bridge cap must let through: the largest answer of every feed over the shipped data set
 * (each game, each collection and its assets, each city), measured here so the default stays justified
 * as the data set grows. The adapter's answer carries the envelope's `data` once more beside `result`,
 * so it is about twice the feed's body. The values each answer builds when parsed are counted too,
 * against DECODE_MAX_NODES.
 */
const KEY = 'answer-size-key-0001'
let server: FeedServer
let baseUrl = ''
beforeAll(async () => {
  server = createFeedServer({ keys: [KEY] })
  baseUrl = await server.listen(0)
})
afterAll(() => server.close())

async function bodySize(endpoint: string, params: Record<string, string>): Promise<number> {
  const url = feedUrl(baseUrl, getEndpoint(endpoint as never), { ...params, key: KEY })
  const response = await fetch(url)
  const body = await response.text()
  if (response.status !== 200) return 0
  const budget = new NodeBudget(Number.MAX_SAFE_INTEGER, 'answer')
  nestingBeyond(body, 64, budget)
  mostValues = Math.max(mostValues, budget.count)
  return Buffer.byteLength(body)
}
/** The most values one answer builds when parsed. */
let mostValues = 0

describe('feed answer sizes', () => {
  it('the largest answer of the data set fits BRIDGE_MAX_RESPONSE_BYTES, FETCH_MAX_RESPONSE_BYTES and DECODE_MAX_NODES many times over', async () => {
    const data = loadDataSet()
    const sizes: Array<[string, number]> = []
    for (const game of data.games) {
      // The service requires a region and does not match games on it.
      const params = {
        region: 'england',
        sport: game.sport,
        league: game.league,
        date: game.date,
        homeTeam: game.homeTeam,
      }
      for (const endpoint of ['game-odds', 'boxscores'])
        sizes.push([`${endpoint} ${game.id}`, await bodySize(endpoint, params)])
      for (const player of game.players.slice(0, 3))
        sizes.push([
          `player-boxscores ${game.id}`,
          await bodySize('player-boxscores', { ...params, player: player.name }),
        ])
    }
    for (const collection of data.collections) {
      const contract = collection.contract
      sizes.push([
        `collection-floor-price ${collection.slug}`,
        await bodySize('collection-floor-price', { collection_contract_address: contract }),
      ])
      sizes.push([
        `asset-contract ${collection.slug}`,
        await bodySize('asset-contract', { asset_contract_address: contract }),
      ])
      for (const tokenId of Object.keys(collection.assets))
        sizes.push([
          `asset-floor-price ${collection.slug}`,
          await bodySize('asset-floor-price', {
            asset_contract_address: contract,
            token_id: tokenId,
          }),
        ])
    }
    const weather = getEndpoint('weather')
    for (const city of data.cities)
      sizes.push([
        `weather ${city.area}`,
        await bodySize(weather.name, {
          ...weather.example,
          area: city.area,
          state: city.state,
          country: city.country,
        }),
      ])
    const answered = sizes.filter(([, size]) => size > 0)
    const [largestName, largest] = answered.reduce((a, b) => (b[1] > a[1] ? b : a))
    const defaults = settingsSchema.parse({})
    console.log(
      `[answer-size] ${answered.length} answers of ${catalogEntries.length} endpoints; largest ${largest} bytes (${largestName}); BRIDGE_MAX_RESPONSE_BYTES ${defaults.BRIDGE_MAX_RESPONSE_BYTES} = ${(defaults.BRIDGE_MAX_RESPONSE_BYTES / largest).toFixed(1)}x; most values ${mostValues}, DECODE_MAX_NODES ${defaults.DECODE_MAX_NODES} = ${(defaults.DECODE_MAX_NODES / mostValues).toFixed(0)}x`,
    )
    expect(answered.length).toBeGreaterThan(data.games.length)
    // Through the adapter an answer is about twice the feed's body; the cap leaves a wide margin.
    expect(2 * largest * 4).toBeLessThan(defaults.BRIDGE_MAX_RESPONSE_BYTES)
    expect(largest * 8).toBeLessThan(defaults.FETCH_MAX_RESPONSE_BYTES)
    // A blockchain answer of ~100 kB (the largest on mainnet) builds some 30 times the values of the
    // largest here; the budget leaves room for that many times over.
    expect(mostValues * 100).toBeLessThan(defaults.DECODE_MAX_NODES)
  })
})
