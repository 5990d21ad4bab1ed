import { Decimal } from 'decimal.js'
import type { ConsumerRequest } from '../src/dev/requests.ts'
import { loadDataSet } from '../src/feeds/server/data/index.ts'

/**
 * What the fault search asks for: the odds of an EPL game of the feed service's own data set, through
 * the `game-odds` job (jobs/game-odds.toml), times 100 as a uint256. The answer is known before it is
 * asked, so every value the chain ends up with is checked.
 */
export const GAME_ODDS_JOB = 'datafeed game-odds (uint256)'

export const ODDS_LINES = ['homeMoneyLine', 'drawMoneyLine', 'awayMoneyLine'] as const
export type OddsLine = (typeof ODDS_LINES)[number]

const GAMES = loadDataSet().games.filter(
  (game) => game.sport === 'soccer' && game.league === 'epl' && game.odds.drawMoneyLine !== null,
)

/** How many games a request may ask about (a schedule draws an index below this). */
export const GAME_COUNT = GAMES.length

function gameAt(index: number) {
  const game = GAMES[index]
  if (!game) throw new Error(`no EPL game ${index} in the feed data set (${GAME_COUNT} games)`)
  return game
}

/** The on-chain request for the odds of game `game` on `line`. */
export function consumerRequest(
  externalJobId: string,
  ask: { game: number; line: OddsLine },
): ConsumerRequest {
  return { externalJobId, valueType: 'uint256', params: gameOddsParams(ask), payment: 0n }
}

/** The game-odds endpoint's parameters for the odds of game `game` on `line`, times 100. */
export function gameOddsParams(ask: { game: number; line: OddsLine }): Array<[string, string]> {
  const game = gameAt(ask.game)
  return [
    ['region', 'england'],
    ['sport', 'soccer'],
    ['league', 'epl'],
    ['date', game.date],
    ['homeTeam', game.homeTeamShort],
    ['path', `$.data.${ask.line}`],
    ['times', '100'],
  ]
}

/** The value the consumer must store: the odds times 100, truncated as the pipeline's uint256 cast does. */
export function expectedValue(ask: { game: number; line: OddsLine }): bigint {
  const odds = gameAt(ask.game).odds[ask.line]
  return BigInt(new Decimal(String(odds)).times(100).floor().toFixed(0))
}
