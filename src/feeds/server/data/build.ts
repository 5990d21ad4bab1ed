/**
 * Builds the local feed service's data set (sports.json, nft.json, weather.json in this folder)
 * from the research reference (fixtures-draft.json and the service's/providers' samples).
 * Run once by a maintainer: `npx tsx src/feeds/server/data/build.ts <reference dir>`; the output is
 * committed, and nothing reads the reference at run time.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const referenceDir = process.argv[2] ?? '../shared/reference'
const outDir = new URL('.', import.meta.url).pathname

type Json = Record<string, unknown>
const read = (path: string): Json =>
  JSON.parse(readFileSync(join(referenceDir, path), 'utf8')) as Json
const reference = read('fixtures-draft.json') as {
  soccer: Json[]
  nba: Json[]
  nftCollections: Json[]
  weatherCities: Json[]
  weatherGenerationRanges: Json
}

function csvRows(path: string): Record<string, string>[] {
  const [header, ...lines] = readFileSync(join(referenceDir, path), 'utf8').trim().split('\n')
  const names = header!.split(',')
  return lines.map((line) =>
    Object.fromEntries(line.split(',').map((value, index) => [names[index]!, value])),
  )
}

// Penalties missed/saved are in the FPL excerpt (same players as the reference's player lists).
const fplByName = new Map(
  csvRows('samples/fpl_2024-25_gw1_fixtures1-2_players_excerpt.csv').map((row) => [row.name!, row]),
)

function soccerGame(match: Json) {
  const half = match.halfTime as { home: number; away: number }
  const odds = match.odds as Json
  const startTime = match.startTimeEpochSec as number
  const homeScore = match.homeTeamScore as number
  const awayScore = match.awayTeamScore as number
  const players = ((match.players as Json[] | undefined) ?? []).map((player) => {
    const fpl = fplByName.get(player.name as string)
    const opponentScore = player.homeOrAway === 'home' ? awayScore : homeScore
    const minutes = player.minutes as number
    return {
      name: player.name,
      team: player.team,
      position: player.position,
      minutes,
      goals: player.goals,
      assists: player.assists,
      yellowCards: player.yellowCards,
      redCards: player.redCards,
      ownGoals: player.ownGoals,
      goalkeeperSaves: player.goalkeeperSaves,
      penaltyKickMisses: fpl ? Number(fpl.penalties_missed) : null,
      penaltyKickSaves: fpl ? Number(fpl.penalties_saved) : null,
      // Derived: exact for a goalkeeper who played the whole match.
      goalkeeperGoalsAgainst: player.position === 'GK' && minutes >= 90 ? opponentScore : null,
      // Derived: a defender on the pitch 60+ minutes of a match the opponent did not score in kept a
      // clean sheet; one who played all 90 of a match with goals against did not; otherwise unknown.
      defenderCleanSheets:
        player.position !== 'DEF' || minutes < 60
          ? null
          : opponentScore === 0
            ? 1
            : minutes >= 90
              ? 0
              : null,
    }
  })
  return {
    id: match.id,
    sport: 'soccer',
    league: match.league,
    date: match.date,
    kickoffUtc: match.kickoffUtc,
    startTime,
    // Synthetic: when the final result was recorded (kick-off + 2 h 15 min).
    lastUpdated: (startTime + 8100) * 1000,
    homeTeam: match.homeTeam,
    homeTeamShort: match.homeTeamShort,
    awayTeam: match.awayTeam,
    awayTeamShort: match.awayTeamShort,
    status: 3,
    homeTeamScore: homeScore,
    awayTeamScore: awayScore,
    periods: [
      { key: 'firstPeriod', period: 'first half', sideAScore: half.home, sideBScore: half.away },
      {
        key: 'secondPeriod',
        period: 'second half',
        sideAScore: homeScore - half.home,
        sideBScore: awayScore - half.away,
      },
    ],
    odds: {
      homeMoneyLine: odds.homeMoneyLine,
      drawMoneyLine: odds.drawMoneyLine,
      awayMoneyLine: odds.awayMoneyLine,
    },
    players,
    provenance: {
      game: match.provenance,
      startTime: 'REAL kick-off (FPL fixtures), epoch seconds as in the service sample',
      lastUpdated: 'SYNTHETIC: kick-off + 2 h 15 min',
      players:
        players.length > 0
          ? `${match.playersProvenance as string} goalkeeperGoalsAgainst/defenderCleanSheets derived from the score; penalties from the FPL excerpt; other statistics unavailable (null).`
          : 'no player data in the reference',
    },
  }
}

function nbaGame(game: Json) {
  const odds = game.odds as Json
  const startTime = Date.parse(`${game.date as string}T00:00:00Z`) / 1000
  return {
    id: game.id,
    sport: 'basketball',
    league: game.league,
    date: game.date,
    kickoffUtc: null,
    startTime,
    lastUpdated: (startTime + 86_400) * 1000,
    homeTeam: game.homeTeam,
    homeTeamShort: (game.homeTeam as string).split(' ').slice(-1)[0],
    awayTeam: game.awayTeam,
    awayTeamShort: (game.awayTeam as string).split(' ').slice(-1)[0],
    status: 3,
    homeTeamScore: game.homeTeamScore,
    awayTeamScore: game.awayTeamScore,
    // Quarter scores are not in the reference: none are invented.
    periods: [],
    odds: {
      homeMoneyLine: odds.homeMoneyLine,
      drawMoneyLine: odds.drawMoneyLine,
      awayMoneyLine: odds.awayMoneyLine,
    },
    players: [],
    provenance: {
      game: game.provenance,
      odds: odds.provenance,
      startTime:
        'SYNTHETIC: midnight UTC of the game day (tip-off time not in the reference; the service sample uses midnight UTC)',
      lastUpdated: 'SYNTHETIC: start + 24 h',
      shortNames: 'SYNTHETIC: last word of the team name (e.g. Celtics)',
    },
  }
}

// Real asset-contract records: SuperRare (the service's own sample), CryptoKitties and CryptoPunks (OpenSea v1 samples).
const gora = read('samples/gora_algokit_feed_examples.json')
const cryptoKitties = read('samples/opensea_v1_asset_contract_cryptokitties.json')
const cryptoPunk = read('samples/opensea_v1_asset_cryptopunk1.json')
const realContracts: Record<string, { record: Json; provenance: string }> = {
  '0xb932a70a57673d89f4acffbe830e8ed7f75fb9e0': {
    record: gora.nft_asset_contract as Json,
    provenance: 'REAL: the service sample (Gora feed_examples.json nft_asset_contract)',
  },
  '0x06012c8cf97bead5deae237070f9587f8e7a266d': {
    record: cryptoKitties,
    provenance: 'REAL: OpenSea v1 asset_contract sample',
  },
  '0xb47e3cd837ddf8e4c57f05d70ab865de6e193bbb': {
    record: {
      collection: {
        ...(cryptoPunk.collection as Json),
        primary_asset_contracts: undefined,
        payment_tokens: undefined,
        stats: undefined,
      },
      ...(cryptoPunk.asset_contract as Json),
    },
    provenance: 'REAL: OpenSea v1 asset sample (asset_contract and collection)',
  },
}

function syntheticContract(collection: Json): Json {
  return {
    collection: {
      name: collection.name,
      slug: collection.slug,
      description: `${collection.name as string} collection`,
      image_url: '',
      banner_image_url: '',
      fees: {},
    },
    address: collection.contract,
    asset_contract_type: collection.schema === 'ERC1155' ? 'semi-fungible' : 'non-fungible',
    chain_identifier: 'ethereum',
    created_date: '2021-04-22T23:14:03.967000',
    name: collection.name,
    nft_version: '3.0',
    opensea_version: null,
    owner: null,
    schema_name: collection.schema,
    symbol: collection.symbol,
    total_supply: collection.totalSupply === null ? null : String(collection.totalSupply),
    description: `${collection.name as string} collection`,
    external_link: '',
    image_url: '',
    default_to_fiat: false,
    dev_buyer_fee_basis_points: 0,
    dev_seller_fee_basis_points: 250,
    only_proxied_transfers: false,
    opensea_buyer_fee_basis_points: 0,
    opensea_seller_fee_basis_points: 250,
    buyer_fee_basis_points: 0,
    seller_fee_basis_points: 500,
    payout_address: null,
  }
}

const nft = reference.nftCollections.map((collection) => {
  const real = realContracts[collection.contract as string]
  const sample = collection.sampleAsset as Json | undefined
  return {
    name: collection.name,
    slug: collection.slug,
    contract: collection.contract,
    totalSupply: collection.totalSupply,
    floorPrice: collection.floorPriceEth,
    contractRecord: JSON.parse(JSON.stringify(real?.record ?? syntheticContract(collection))),
    // The service sample's asset (SuperRare "Golf" by RivenRibbon) has no token id: 1 is assigned.
    assets: sample ? { '1': { name: sample.name, creator: sample.creator } } : {},
    provenance: {
      floorPrice: collection.floorProvenance,
      contract:
        real?.provenance ??
        `SYNTHETIC record built from ${collection.contractProvenance as string}`,
      assets: sample
        ? 'REAL name/creator (service sample); token id 1 SYNTHETIC; other token ids get SYNTHETIC names "<collection> #<id>"'
        : 'SYNTHETIC names "<collection> #<id>", creator = collection name',
    },
  }
})

const weather = {
  cities: reference.weatherCities,
  ranges: reference.weatherGenerationRanges,
  provenance:
    'Cities from the reference (query triples REAL, coordinates approximate). Readings SYNTHETIC, derived deterministically from the query within ranges.',
}

const sports = { games: [...reference.soccer.map(soccerGame), ...reference.nba.map(nbaGame)] }

const write = (name: string, value: unknown) =>
  writeFileSync(join(outDir, name), `${JSON.stringify(value, null, 1)}\n`)
write('sports.json', sports)
write('nft.json', { collections: nft })
write('weather.json', weather)
console.log(
  `wrote ${sports.games.length} games, ${nft.length} NFT collections, ${weather.cities.length} cities to ${outDir}`,
)
