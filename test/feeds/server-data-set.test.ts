import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { loadDataSet } from '../../src/feeds/server/data/index.ts'
import { useFeedService } from './support.ts'

// Sports, NFT and weather answers come from the shipped data set: no chain, no signers.
const service = useFeedService()
const call = service.call

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
