import { z } from 'zod'
import { codeParam, dateParam, enumParam, textParam } from './params.ts'
import { nullableNumber, numberLike } from './fields.ts'
import type { CatalogEntry, ParamSpec } from './types.ts'

export const SPORTS_REGIONS = [
  'world',
  'europe',
  'africa',
  'asia',
  'usa',
  'england',
  'germany',
  'italy',
  'spain',
  'france',
] as const
export const SPORTS = ['soccer', 'basketball', 'american football'] as const

const gameParams: Record<string, ParamSpec> = {
  region: enumParam(
    { name: 'region', description: 'Region of the league', example: 'england' },
    SPORTS_REGIONS,
  ),
  sport: enumParam({ name: 'sport', description: 'Sport of the game', example: 'soccer' }, SPORTS),
  league: codeParam({
    name: 'league',
    description: 'League code, e.g. epl, itsa, esp, deb, frl1, nba',
    example: 'epl',
  }),
  date: dateParam({
    name: 'date',
    description: 'Date of the game, YYYY-MM-DD',
    example: '2024-08-16',
  }),
  homeTeam: textParam({
    name: 'homeTeam',
    description: 'Short or full name of the home team',
    example: 'Manchester United',
  }),
}

const gameExample = {
  region: 'england',
  sport: 'soccer',
  league: 'epl',
  date: '2024-08-16',
  homeTeam: 'Manchester United',
}
const gameIdentity = ['region', 'sport', 'league', 'date', 'homeTeam']

/** 1 Scheduled, 2 Live/Ongoing, 3 Completed, 4 Cancelled; a number in the sample, "string" in the docs. */
const gameStatus = z.union([z.number().int().min(1).max(4), z.enum(['1', '2', '3', '4'])])

export const gameOdds: CatalogEntry = {
  name: 'game-odds',
  family: 'sports',
  path: '/api/v4/game-odds',
  description: 'Betting odds (decimal) and score of a game',
  params: gameParams,
  example: gameExample,
  identity: gameIdentity,
  data: z.looseObject({
    startTime: z.number(),
    status: gameStatus,
    awayTeamName: z.string(),
    homeTeamName: z.string(),
    homeTeamScore: nullableNumber,
    awayTeamScore: nullableNumber,
    homeMoneyLine: z.number(),
    awayMoneyLine: z.number(),
    // Null for sports without a draw market (basketball); FEEDS.md only shows soccer.
    drawMoneyLine: z.number().nullable(),
  }),
  aliases: {},
  defaultResultPath: 'homeMoneyLine',
  providerFlags: true,
  hasLastUpdated: true,
}

const periodResult = z.looseObject({
  period: z.string(),
  sideAScore: numberLike,
  sideBScore: numberLike,
})

export const boxscores: CatalogEntry = {
  name: 'boxscores',
  family: 'sports',
  path: '/api/v4/boxscores',
  description: 'Final or current score of a game with the score of each period',
  params: gameParams,
  example: gameExample,
  identity: gameIdentity,
  data: z.looseObject({
    eventId: z.string(),
    sideAName: z.string(),
    sideBName: z.string(),
    sideAScore: z.number(),
    sideBScore: z.number(),
    periodResult: z.record(z.string(), periodResult),
  }),
  // The field table says periodResult; the sample response says periodResults.
  aliases: { periodResult: ['periodResults'] },
  defaultResultPath: 'sideAScore',
  providerFlags: true,
  hasLastUpdated: true,
}

/** Player statistics: numbers, null when unavailable. Canonical names are the field table's. */
const playerStatFields = [
  'minutes',
  'goals',
  'assists',
  'shots',
  'shotsOnGoal',
  'yellowCards',
  'redCards',
  'crosses',
  'tacklesWon',
  'interceptions',
  'ownGoals',
  'fouls',
  'fouled',
  'offsides',
  'passes',
  'passesCompleted',
  'lastManTackle',
  'cornersWon',
  'blockedShots',
  'touches',
  'defenderCleanSheets',
  'goalkeeperSaves',
  'goalkeeperGoalAgainst',
  'penaltyKicksGoals',
  'penaltyKicksMisses',
  'penaltyKickSaves',
  'penaltiesWon',
  'penaltiesConceded',
] as const

export const playerBoxscores: CatalogEntry = {
  name: 'player-boxscores',
  family: 'sports',
  path: '/api/v4/boxscores/players',
  description: "One player's statistics in a game",
  params: {
    ...gameParams,
    player: textParam({
      name: 'player',
      description: 'Name of the player',
      example: 'Joshua Zirkzee',
    }),
  },
  example: { ...gameExample, player: 'Joshua Zirkzee' },
  identity: [...gameIdentity, 'player'],
  data: z.looseObject({
    statId: z.string(),
    playerId: z.string(),
    name: z.string(),
    teamName: z.string(),
    ...Object.fromEntries(playerStatFields.map((field) => [field, nullableNumber])),
  }),
  aliases: {
    goalkeeperGoalAgainst: ['goalkeeperGoalsAgainst'],
    penaltyKicksGoals: ['penaltyKickGoals'],
    penaltyKicksMisses: ['penaltyKickMisses'],
  },
  defaultResultPath: 'goals',
  providerFlags: true,
  hasLastUpdated: false,
}

export const sportsEntries = [gameOdds, boxscores, playerBoxscores] as const
