import type { ValidatedParams } from '../catalog/index.ts'
import type { Game, PlayerLine } from './data/index.ts'
import { FeedServiceError } from './errors.ts'
import { normaliseName } from './match.ts'
import type { Answer } from './answer.ts'

/** The game of `homeTeam` (full or short name) on `date` in `league` and `sport`; region is not a property of a game. */
export function findGame(games: readonly Game[], params: ValidatedParams): Game {
  const team = normaliseName(params.homeTeam!)
  const game = games.find(
    (candidate) =>
      candidate.date === params.date &&
      candidate.league === params.league &&
      candidate.sport === params.sport &&
      (normaliseName(candidate.homeTeam) === team ||
        normaliseName(candidate.homeTeamShort) === team),
  )
  if (!game) {
    throw new FeedServiceError(
      404,
      `no ${params.sport} game with homeTeam ${params.homeTeam} on date ${params.date} in league ${params.league}`,
    )
  }
  return game
}

function title(game: Game): string {
  return `${game.homeTeam} v ${game.awayTeam} on ${game.date}`
}

export function gameOddsAnswer(games: readonly Game[], params: ValidatedParams): Answer {
  const game = findGame(games, params)
  return {
    description: `Game odds for ${title(game)}`,
    lastUpdated: game.lastUpdated,
    data: {
      startTime: game.startTime,
      status: game.status,
      awayTeamName: game.awayTeam,
      homeTeamName: game.homeTeam,
      homeTeamScore: game.homeTeamScore,
      awayTeamScore: game.awayTeamScore,
      homeMoneyLine: game.odds.homeMoneyLine,
      awayMoneyLine: game.odds.awayMoneyLine,
      drawMoneyLine: game.odds.drawMoneyLine,
    },
  }
}

export function boxscoresAnswer(games: readonly Game[], params: ValidatedParams): Answer {
  const game = findGame(games, params)
  if (game.homeTeamScore === null || game.awayTeamScore === null) {
    throw new FeedServiceError(404, `no boxscore yet for ${title(game)}: the game has not started`)
  }
  return {
    description: `Boxscores for ${title(game)}`,
    lastUpdated: game.lastUpdated,
    data: {
      eventId: game.id,
      sideAName: game.homeTeam,
      sideBName: game.awayTeam,
      sideAScore: game.homeTeamScore,
      sideBScore: game.awayTeamScore,
      // The sample response's spelling (the field table says periodResult).
      periodResults: Object.fromEntries(game.periods.map(({ key, ...period }) => [key, period])),
    },
  }
}

/** The player named exactly (ignoring case and accents), or the only one whose name contains the query as words. */
function findPlayer(game: Game, query: string): PlayerLine {
  const wanted = normaliseName(query)
  const exact = game.players.find((player) => normaliseName(player.name) === wanted)
  if (exact) return exact
  const partial = game.players.filter((player) =>
    ` ${normaliseName(player.name)} `.includes(` ${wanted} `),
  )
  if (partial.length === 1) return partial[0]!
  if (partial.length > 1)
    throw new FeedServiceError(
      400,
      `parameter player ${query} matches several players: ${partial.map((player) => player.name).join(', ')}`,
    )
  throw new FeedServiceError(404, `no statistics for player ${query} in ${title(game)}`)
}

function slug(text: string): string {
  return normaliseName(text)
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
}

export function playerBoxscoresAnswer(games: readonly Game[], params: ValidatedParams): Answer {
  const game = findGame(games, params)
  if (game.players.length === 0)
    throw new FeedServiceError(404, `no player statistics for ${title(game)} in this data set`)
  const player = findPlayer(game, params.player!)
  // Statistics the data set does not have are null, as the service does for unavailable values.
  return {
    description: `Player boxscore of ${player.name} in ${title(game)}`,
    data: {
      statId: `${game.id}-${slug(player.name)}`,
      playerId: `${game.league}-${slug(player.name)}`,
      name: player.name,
      teamName: player.team,
      minutes: player.minutes,
      goals: player.goals,
      assists: player.assists,
      shots: null,
      shotsOnGoal: null,
      yellowCards: player.yellowCards,
      redCards: player.redCards,
      crosses: null,
      tacklesWon: null,
      interceptions: null,
      ownGoals: player.ownGoals,
      fouls: null,
      fouled: null,
      offsides: null,
      passes: null,
      passesCompleted: null,
      lastManTackle: null,
      cornersWon: null,
      blockedShots: null,
      touches: null,
      defenderCleanSheets: player.defenderCleanSheets,
      goalkeeperSaves: player.goalkeeperSaves,
      goalkeeperGoalsAgainst: player.goalkeeperGoalsAgainst,
      penaltyKickGoals: null,
      penaltyKickMisses: player.penaltyKickMisses,
      penaltyKickSaves: player.penaltyKickSaves,
      penaltiesWon: null,
      penaltiesConceded: null,
    },
  }
}
