import { CronExpressionParser } from 'cron-parser'
import { keccak256, toUtf8Bytes } from 'ethers'
import type { Redis } from 'ioredis'
import { z } from 'zod'
import type { CronSchedule } from '../pipeline/index.ts'
import { luaScriptFile } from '../queue/lua-script.ts'

/**
 * A cron job's firing, as the cron ticker adds it to the chain's `requests` queue (the one queue,
 * worker and retry policy every run has): which job, and the tick it fires for, an instant of the
 * schedule that was due by Redis's clock when the firing was added.
 */
export const tickPayloadSchema = z.object({
  kind: z.literal('tick'),
  chainId: z.number().int().positive(),
  externalJobId: z.string(),
  /** The schedule's instant this firing is for, epoch milliseconds. */
  tick: z.number().int(),
  /** Runs of the tick whose isolate died under a task (as a request's `crashes`). */
  crashes: z.number().int().nonnegative().optional(),
})
export type TickPayload = z.infer<typeof tickPayloadSchema>

export function isTickPayload(data: unknown): data is TickPayload {
  return (data as { kind?: unknown } | undefined)?.kind === 'tick'
}

/**
 * The queue job id of a tick's firing: every runner adds the firing of a tick that fell due, and
 * BullMQ keeps one job under one id.
 */
export function firingJobId(externalJobId: string, tickMs: number): string {
  return `tick-${externalJobId}-${tickMs}`
}

/**
 * The run id of a cron job's tick: 32 bytes like a request id, so `runs show` and the short ids of
 * `status` take it as they take a request's.
 */
export function tickRunId(externalJobId: string, tickMs: number): string {
  return keccak256(toUtf8Bytes(`tick:${externalJobId}:${tickMs}`))
}

/** The schedule's last instant at or before `nowMs` (Redis's time): the tick that is due. */
export function dueTick(schedule: CronSchedule, nowMs: number): number {
  if (schedule.kind === 'every') return Math.floor(nowMs / schedule.everyMs) * schedule.everyMs
  // cron-parser's prev() is strictly before its date.
  return CronExpressionParser.parse(schedule.pattern, {
    tz: schedule.tz,
    currentDate: new Date(nowMs + 1),
  })
    .prev()
    .getTime()
}

/** The schedule's first instant after `nowMs`. */
export function nextTickAfter(schedule: CronSchedule, nowMs: number): number {
  if (schedule.kind === 'every')
    return (Math.floor(nowMs / schedule.everyMs) + 1) * schedule.everyMs
  return CronExpressionParser.parse(schedule.pattern, {
    tz: schedule.tz,
    currentDate: new Date(nowMs),
  })
    .next()
    .getTime()
}

/**
 * How far back a firing looks for ticks of its job that no firing claimed: a runner slower than the
 * period (a busy host, a runner that died holding a firing and was taken over) still runs each tick,
 * late. A job with no tick claimed in this window had no runner: its missed ticks are not made up.
 */
export const TICK_CATCH_UP_MS = 30_000
/** At most this many ticks run in one firing (a schedule of seconds caught up after a stall). */
const MAX_TICKS_A_FIRING = 30

/** The schedule's instants from `fromMs` up to the instant `last`, ascending (at most 30). */
export function ticksBetween(schedule: CronSchedule, fromMs: number, last: number): number[] {
  const ticks: number[] = []
  if (schedule.kind === 'every') {
    const first = Math.ceil(fromMs / schedule.everyMs) * schedule.everyMs
    for (let tick = first; tick < last; tick += schedule.everyMs) ticks.push(tick)
  } else {
    const expression = CronExpressionParser.parse(schedule.pattern, {
      tz: schedule.tz,
      currentDate: new Date(fromMs - 1),
    })
    for (let tick = expression.next().getTime(); tick < last; tick = expression.next().getTime())
      ticks.push(tick)
  }
  return [...ticks.slice(-(MAX_TICKS_A_FIRING - 1)), last]
}

const CLAIM_TICKS = luaScriptFile(new URL('./records/claim-ticks.lua', import.meta.url), {
  keys: ['ticks', 'by_job'],
  args: ['job_id', 'ttl_ms', 'oldest'],
})
const CLAIM_TTL_MS = 24 * 3600 * 1000

/**
 * The ticks this queue job runs: those it claimed before (it is taken again), else every tick of the
 * last TICK_CATCH_UP_MS (by Redis's clock, `nowMs`) after the job's last claimed one up to the
 * firing's own tick, that no other queue job claimed; empty when another one did (a firing added
 * again once the first had run, by a runner that saw the tick late).
 */
export async function claimTicks(
  redis: Redis,
  prefix: string,
  payload: TickPayload,
  queueJobId: string,
  nowMs: number,
  schedule: CronSchedule,
): Promise<number[]> {
  const oldest = nowMs - TICK_CATCH_UP_MS
  const base = `${prefix}:cron:${payload.chainId}:${payload.externalJobId}`
  const claimed = await CLAIM_TICKS.run(
    redis,
    { ticks: `${base}:ticks`, by_job: `${base}:job:${queueJobId}` },
    { job_id: queueJobId, ttl_ms: CLAIM_TTL_MS, oldest },
    ticksBetween(schedule, oldest, payload.tick),
  )
  return z.array(z.number()).parse(JSON.parse(String(claimed)))
}
