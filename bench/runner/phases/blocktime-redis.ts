/**
 * The block-time phase's Redis bill: commands idle per block and per request beyond the idle rate,
 * counted like the JSON-RPC calls (blocktime.ts), in all (INFO commandstats) and, with
 * BENCH_REDIS_SOURCES=1, by what sent them (redis-commands.ts).
 */
import type { Context } from '../load.ts'
import { round } from '../measure.ts'
import { redisCommandStats, totalCalls } from '../redis-commands.ts'

export interface BlockTimeRedis {
  idleCommandsPerBlock: number
  /** Beyond the idle rate over the same blocks, per request. */
  commandsPerRequest: number
  /** With BENCH_REDIS_SOURCES=1, the same by what sent them. */
  bySource?: { idlePerBlock: Record<string, number>; perRequest: Record<string, number> }
}

export interface RedisCounts {
  all: number
  bySource: Record<string, number> | undefined
}

/** Redis commands so far: all (INFO commandstats), and by source with BENCH_REDIS_SOURCES=1. */
export async function redisCounts(ctx: Context): Promise<RedisCounts> {
  return {
    all: totalCalls(await redisCommandStats(ctx.redis)),
    bySource: ctx.redisSources?.snapshot(),
  }
}

interface RedisStretch {
  before: RedisCounts
  after: RedisCounts
  blocks: number
}

/** Redis commands idle per block, and per request beyond the idle rate over the same blocks. */
export function redisBill(
  idle: RedisStretch,
  spread: RedisStretch,
  requests: number,
): BlockTimeRedis {
  const beyondIdle = (idleCount: number, spreadCount: number) =>
    (spreadCount - (idleCount / Math.max(1, idle.blocks)) * spread.blocks) / Math.max(1, requests)
  const bill: BlockTimeRedis = {
    idleCommandsPerBlock: round((idle.after.all - idle.before.all) / Math.max(1, idle.blocks), 2),
    commandsPerRequest: round(
      beyondIdle(idle.after.all - idle.before.all, spread.after.all - spread.before.all),
      1,
    ),
  }
  const [idleBefore, idleAfter] = [idle.before.bySource, idle.after.bySource]
  const spreadAfter = spread.after.bySource
  if (!idleBefore || !idleAfter || !spreadAfter) return bill
  const counted = (from: Record<string, number>, to: Record<string, number>, source: string) =>
    (to[source] ?? 0) - (from[source] ?? 0)
  const sources = Object.keys(spreadAfter)
  return {
    ...bill,
    bySource: {
      idlePerBlock: Object.fromEntries(
        sources.map((source) => [
          source,
          round(counted(idleBefore, idleAfter, source) / Math.max(1, idle.blocks), 2),
        ]),
      ),
      perRequest: Object.fromEntries(
        sources.map((source) => [
          source,
          round(
            beyondIdle(
              counted(idleBefore, idleAfter, source),
              counted(idleAfter, spreadAfter, source),
            ),
            2,
          ),
        ]),
      ),
    },
  }
}
