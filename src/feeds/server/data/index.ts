import { readFileSync } from 'node:fs'
import { z } from 'zod'

// The local feed service's data set, shipped in the repository (built by build.ts) and checked
// with zod when first used, so a broken edit fails loudly at start instead of mid-answer.

const nullableNumber = z.number().nullable()

const playerSchema = z.object({
  name: z.string(),
  team: z.string(),
  position: z.string(),
  minutes: z.number(),
  goals: z.number(),
  assists: z.number(),
  yellowCards: z.number(),
  redCards: z.number(),
  ownGoals: z.number(),
  goalkeeperSaves: z.number(),
  penaltyKickMisses: nullableNumber,
  penaltyKickSaves: nullableNumber,
  goalkeeperGoalsAgainst: nullableNumber,
  defenderCleanSheets: nullableNumber,
})
export type PlayerLine = z.infer<typeof playerSchema>

const gameSchema = z.object({
  id: z.string(),
  sport: z.string(),
  league: z.string(),
  date: z.string(),
  kickoffUtc: z.string().nullable(),
  startTime: z.number(),
  lastUpdated: z.number(),
  homeTeam: z.string(),
  homeTeamShort: z.string(),
  awayTeam: z.string(),
  awayTeamShort: z.string(),
  status: z.number().int().min(1).max(4),
  homeTeamScore: nullableNumber,
  awayTeamScore: nullableNumber,
  periods: z.array(
    z.object({
      key: z.string(),
      period: z.string(),
      sideAScore: z.number(),
      sideBScore: z.number(),
    }),
  ),
  odds: z.object({
    homeMoneyLine: z.number(),
    drawMoneyLine: nullableNumber,
    awayMoneyLine: z.number(),
  }),
  players: z.array(playerSchema),
  provenance: z.record(z.string(), z.unknown()),
})
export type Game = z.infer<typeof gameSchema>

const collectionSchema = z.object({
  name: z.string(),
  slug: z.string(),
  contract: z.string().regex(/^0x[0-9a-f]{40}$/),
  totalSupply: nullableNumber,
  floorPrice: nullableNumber,
  contractRecord: z.record(z.string(), z.unknown()),
  assets: z.record(z.string(), z.object({ name: z.string(), creator: z.string() })),
  provenance: z.record(z.string(), z.unknown()),
})
export type Collection = z.infer<typeof collectionSchema>

const range = z.tuple([z.number(), z.number()])
const citySchema = z.object({
  area: z.string(),
  state: z.string(),
  country: z.string(),
  latitude: z.number(),
  longitude: z.number(),
  timezone: z.string(),
  tzoffset: z.number(),
  provenance: z.string(),
})
export type City = z.infer<typeof citySchema>

const weatherSchema = z.object({
  cities: z.array(citySchema),
  ranges: z.object({
    metric: z.looseObject({
      temp_C: range,
      humidity_pct: range,
      precip_mm: range,
      precipprob_pct: range,
      snow_cm: range,
      windspeed_kmh: range,
      winddir_deg: range,
      pressure_mb: range,
      visibility_km: range,
      cloudcover_pct: range,
      uvindex: range,
    }),
  }),
})
export type WeatherRanges = z.infer<typeof weatherSchema>['ranges']

function load<T>(file: string, schema: z.ZodType<T>): T {
  const text = readFileSync(new URL(file, import.meta.url), 'utf8')
  const parsed = schema.safeParse(JSON.parse(text))
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(`feed data set ${file}: ${issue?.path.join('.')}: ${issue?.message}`)
  }
  return parsed.data
}

export interface FeedDataSet {
  games: Game[]
  collections: Collection[]
  cities: City[]
  weatherRanges: WeatherRanges
}

let cached: FeedDataSet | undefined

/** The shipped data set, loaded and checked once. */
export function loadDataSet(): FeedDataSet {
  if (!cached) {
    const weather = load('./weather.json', weatherSchema)
    cached = {
      games: load('./sports.json', z.object({ games: z.array(gameSchema) })).games,
      collections: load('./nft.json', z.object({ collections: z.array(collectionSchema) }))
        .collections,
      cities: weather.cities,
      weatherRanges: weather.ranges,
    }
  }
  return cached
}
