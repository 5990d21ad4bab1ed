import { Decimal } from 'decimal.js'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../../src/adapter/workers.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { startAnvil, ANVIL_PRIVATE_KEYS, type Anvil } from '../../src/dev/anvil.ts'
import { catalogEntries, feedCatalog, type EndpointName } from '../../src/feeds/catalog/index.ts'
import { loadDataSet } from '../../src/feeds/server/data/index.ts'
import { createFeedServer, type FeedServer } from '../../src/feeds/server/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { deleteKeys, postAdapter } from './support.ts'

const KEY = 'endpoints-test-key-5d1e'

type Json = Record<string, unknown>

interface Case {
  label: string
  endpoint: EndpointName
  params: Record<string, string>
  path: string
  times?: string
  type?: string
  /** The expected result, computed from the feed service's own answer to the same query. */
  expected: (direct: Json) => unknown
}

/** Value at a dotted path of a plain object (test-side, independent of src/reduce). */
function at(json: unknown, ...keys: (string | number)[]): unknown {
  let value = json
  for (const key of keys) {
    if (Array.isArray(value) && typeof key === 'number')
      value = value[key < 0 ? value.length + key : key]
    else value = (value as Json | undefined)?.[key]
  }
  return value
}

/** An Airnode uint256 cast: exact multiply, then floor; as a decimal string. */
function scaled(value: unknown, times: string): string {
  return new Decimal(String(value)).times(times).floor().toFixed(0)
}

describe('every endpoint and weather variant through the adapter', () => {
  let anvil: Anvil
  let feed: FeedServer
  let adapter: RunningAdapter
  let workers: RunningFetchWorkers
  const prefix = uniquePrefix('endpoints').replace(/:/g, '.')
  let account: string
  const cases: Case[] = []

  beforeAll(async () => {
    anvil = await startAnvil()
    feed = createFeedServer({ keys: [KEY], chains: { local: anvil.rpcUrl } })
    const feedUrl = await feed.listen(0)
    const settings = parseSettings({
      REDIS_URL: testRedisUrl(),
      QUEUE_PREFIX: prefix,
      SPORTS_URL: feedUrl,
      BLOCKCHAIN_URL: feedUrl,
      NFT_URL: feedUrl,
      WEATHER_URL: feedUrl,
      FEED_API_KEY: KEY,
      LOG_LEVEL: 'silent',
    })
    adapter = await startAdapter({ settings, framework: { EA_PORT: 0, METRICS_ENABLED: false } })
    workers = await startFetchWorkers({ settings })
    account = new Wallet(ANVIL_PRIVATE_KEYS[0]!).address
  })

  afterAll(async () => {
    await adapter?.close()
    await workers?.close()
    await feed?.close()
    await deleteKeys(testRedisUrl(), `${prefix}:*`)
    await anvil?.stop()
  })

  /** The feed service's answer to a query, fetched directly with the key. */
  async function direct(endpoint: EndpointName, params: Record<string, string>): Promise<Json> {
    const url = new URL(feed.url + feedCatalog[endpoint].path)
    url.search = new URLSearchParams({ ...params, key: KEY }).toString()
    const response = await fetch(url)
    expect(response.status).toBe(200)
    return (await response.json()) as Json
  }

  const game = loadDataSet().games.find(
    (candidate) => candidate.homeTeam === 'Manchester United' && candidate.date === '2024-08-16',
  )!
  const gameQuery = {
    region: 'england',
    sport: 'soccer',
    league: 'epl',
    date: game.date,
    homeTeam: game.homeTeam,
  }
  const goalkeeper = game.players.find((player) => player.goalkeeperGoalsAgainst !== null)!
  const collection = loadDataSet().collections.find((candidate) => candidate.floorPrice !== null)!
  const weather = feedCatalog.weather

  cases.push(
    {
      label: 'game-odds draw odds x100',
      endpoint: 'game-odds',
      params: gameQuery,
      path: '$.data.drawMoneyLine',
      times: '100',
      type: 'uint256',
      expected: () => scaled(game.odds.drawMoneyLine, '100'),
    },
    {
      label: 'game-odds home odds, comma path',
      endpoint: 'game-odds',
      params: gameQuery,
      path: 'data,homeMoneyLine',
      times: '1000',
      type: 'uint256',
      expected: () => scaled(game.odds.homeMoneyLine, '1000'),
    },
    {
      label: 'boxscores second half via the sample spelling',
      endpoint: 'boxscores',
      params: gameQuery,
      path: 'data.periodResults.secondPeriod.sideAScore',
      type: 'uint256',
      expected: () =>
        String(game.periods.find((period) => period.key === 'secondPeriod')!.sideAScore),
    },
    {
      label: 'boxscores via the field table spelling',
      endpoint: 'boxscores',
      params: gameQuery,
      path: '$.data.periodResult.firstPeriod.sideBScore',
      expected: () => game.periods.find((period) => period.key === 'firstPeriod')!.sideBScore,
    },
    {
      label: 'player-boxscores goalkeeper alias',
      endpoint: 'player-boxscores',
      params: { ...gameQuery, player: goalkeeper.name },
      path: '$.data.goalkeeperGoalAgainst',
      type: 'int256',
      expected: () => String(goalkeeper.goalkeeperGoalsAgainst),
    },
    {
      label: 'player-boxscores minutes',
      endpoint: 'player-boxscores',
      params: { ...gameQuery, player: goalkeeper.name },
      path: 'data.minutes',
      times: '60',
      type: 'uint256',
      expected: () => scaled(goalkeeper.minutes, '60'),
    },
    {
      label: 'asset-floor-price',
      endpoint: 'asset-floor-price',
      params: {
        ...feedCatalog['asset-floor-price'].example,
        asset_contract_address: collection.contract,
      },
      path: 'data.collection_floor_price',
      times: '1000000000000000000',
      type: 'uint256',
      expected: () => scaled(collection.floorPrice, '1000000000000000000'),
    },
    {
      label: 'collection-floor-price',
      endpoint: 'collection-floor-price',
      params: { collection_contract_address: collection.contract },
      path: '$.data.floor_price',
      times: '100',
      type: 'uint256',
      expected: () => scaled(collection.floorPrice, '100'),
    },
    {
      label: 'asset-contract name',
      endpoint: 'asset-contract',
      params: { asset_contract_address: collection.contract },
      path: 'data.name',
      type: 'string',
      expected: (answer) => at(answer, 'data', 'name'),
    },
    {
      label: 'token-transfers amount',
      endpoint: 'token-transfers',
      params: { ...feedCatalog['token-transfers'].example },
      path: 'data,amount',
      type: 'uint256',
      expected: (answer) => String(at(answer, 'data', 'amount')),
    },
    {
      label: 'transaction gas used',
      endpoint: 'transaction',
      params: { ...feedCatalog.transaction.example },
      path: '$.data.gasUsed',
      type: 'uint256',
      expected: (answer) => String(at(answer, 'data', 'gasUsed')),
    },
    {
      label: 'transaction last recipient, negative index',
      endpoint: 'transaction',
      params: { ...feedCatalog.transaction.example },
      path: '$.data.to[-1].address',
      expected: (answer) => at(answer, 'data', 'to', -1, 'address'),
    },
  )
  for (const variant of weather.variants ?? []) {
    cases.push(
      {
        label: `weather ${variant.name}: windGust alias`,
        endpoint: 'weather',
        params: { ...variant.example },
        path: '$.data.windGust',
        times: '10',
        type: 'int256',
        expected: (answer) => scaled(at(answer, 'data', 'windgust'), '10'),
      },
      {
        label: `weather ${variant.name}: temperature, dot path`,
        endpoint: 'weather',
        params: { ...variant.example },
        path: 'data.temperature',
        expected: (answer) => at(answer, 'data', 'temperature'),
      },
    )
  }

  it('covers every catalog endpoint and every weather variant', () => {
    const covered = new Set(cases.map((testCase) => testCase.endpoint))
    covered.add('account-balance') // its own test below (live from anvil)
    expect([...covered].sort()).toEqual(catalogEntries.map((entry) => entry.name).sort())
    expect(cases.filter((testCase) => testCase.endpoint === 'weather').length).toBe(
      2 * (weather.variants?.length ?? 0),
    )
  })

  it('returns the data set values for Manchester United v Fulham, 2024-08-16', async () => {
    const odds = await postAdapter(adapter.url, { endpoint: 'game-odds', ...gameQuery })
    expect(odds.status).toBe(200)
    // The default result field of game-odds, and the real odds and score.
    expect(odds.body.result).toBe(game.odds.homeMoneyLine)
    expect(at(odds.body, 'data', 'data')).toMatchObject({
      homeMoneyLine: 1.6,
      drawMoneyLine: 4.2,
      awayMoneyLine: 5.25,
      homeTeamScore: 1,
      awayTeamScore: 0,
      awayTeamName: 'Fulham',
    })
    expect(at(odds.body, 'data', 'query')).toEqual(gameQuery)
    expect(at(odds.body, 'data', 'result')).toBe('success')
  })

  for (const testCase of cases) {
    it(testCase.label, async () => {
      const { endpoint, params, path, times, type } = testCase
      // Current weather changes on the hour: the adapter's answer must match the service's answer
      // from just before or just after it.
      const before = testCase.expected(await direct(endpoint, params))
      const answer = await postAdapter(adapter.url, {
        endpoint,
        ...params,
        path,
        ...(times ? { times } : {}),
        ...(type ? { type } : {}),
      })
      expect(answer.status, answer.text).toBe(200)
      const after = testCase.expected(await direct(endpoint, params))
      expect(before).not.toBeUndefined()
      expect([before, after]).toContainEqual(answer.body.result)
      expect(at(answer.body, 'data', 'status')).toBe(200)
    })
  }

  it('account-balance, live from the chain', async () => {
    const { JsonRpcProvider } = await import('ethers')
    const provider = new JsonRpcProvider(anvil.rpcUrl)
    const balance = await provider.getBalance(account)
    provider.destroy()
    const answer = await postAdapter(adapter.url, {
      endpoint: 'account-balance',
      blockchain: 'local',
      address: account,
      type: 'uint256',
    })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body.result).toBe(balance.toString())
  })
})
