import type { Queue } from 'bullmq'
import { CronExpressionParser } from 'cron-parser'
import { keccak256, toUtf8Bytes } from 'ethers'
import type { Redis } from 'ioredis'
import { z } from 'zod'
import { rootCauseFirst } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import { parseSchedule, type CronSchedule } from '../pipeline/index.ts'
import { luaScriptFile } from '../queue/lua-script.ts'
import type { JobRegistry, LoadedJob } from './job-registry.ts'

/**
 * A cron job's queue job, as its BullMQ job scheduler adds it to the chain's `requests` queue (the
 * one queue, worker and retry policy every run has): which job, nothing else. Which tick it runs is
 * decided when it is taken, by Redis's clock (claimTicks).
 */
export const tickPayloadSchema = z.object({
  kind: z.literal('tick'),
  chainId: z.number().int().positive(),
  externalJobId: z.string(),
  /** Runs of the tick whose isolate died under a task (as a request's `crashes`). */
  crashes: z.number().int().nonnegative().optional(),
})
export type TickPayload = z.infer<typeof tickPayloadSchema>

export function isTickPayload(data: unknown): data is TickPayload {
  return (data as { kind?: unknown } | undefined)?.kind === 'tick'
}

/** The BullMQ job scheduler of a cron job: one per job, whatever the number of runners. */
export function schedulerIdOf(externalJobId: string): string {
  return `cron-${externalJobId}`
}

/**
 * The run id of a cron job's tick: 32 bytes like a request id, so `runs show` and the short ids of
 * `status` take it as they take a request's.
 */
export function tickRunId(externalJobId: string, tickMs: number): string {
  return keccak256(toUtf8Bytes(`tick:${externalJobId}:${tickMs}`))
}

/**
 * The schedule's instant nearest to `nowMs` (Redis's time): the tick a queue job taken now runs. A
 * queue job added late (no runner ran at its time) runs the current tick, never the missed one
 * (Chainlink does not make a missed tick up); one added early by a host whose clock is ahead runs
 * the tick its time is nearest to.
 */
export function nearestTick(schedule: CronSchedule, nowMs: number): number {
  if (schedule.kind === 'every') return Math.round(nowMs / schedule.everyMs) * schedule.everyMs
  const expression = () =>
    CronExpressionParser.parse(schedule.pattern, { tz: schedule.tz, currentDate: new Date(nowMs) })
  const before = expression().prev().getTime()
  const after = expression().next().getTime()
  return nowMs - before <= after - nowMs ? before : after
}

/**
 * How far back a firing looks for ticks of its job that no firing claimed: a runner slower than the
 * period (a busy host, a runner that died holding a firing and was taken over) still runs each tick,
 * late. A job with no tick claimed in this window had no runner: its missed ticks are not made up.
 */
export const TICK_CATCH_UP_MS = 30_000
/** At most this many ticks run in one firing (a schedule of seconds caught up after a stall). */
const MAX_TICKS_A_FIRING = 30

/** The schedule's instants from `fromMs` to the one nearest `nowMs`, ascending (at most 30). */
export function ticksBetween(schedule: CronSchedule, fromMs: number, nowMs: number): number[] {
  const last = nearestTick(schedule, nowMs)
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
 * last TICK_CATCH_UP_MS after the job's last claimed one up to the schedule's nearest tick by Redis's
 * clock, that no other queue job claimed; empty when another one did (a duplicate firing).
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
    ticksBetween(schedule, oldest, nowMs),
  )
  return z.array(z.number()).parse(JSON.parse(String(claimed)))
}

/** A cron job's schedule as BullMQ's job scheduler takes it. */
export function repeatOf(schedule: CronSchedule):
  | { every: number; offset: number }
  | {
      pattern: string
      tz: string
    } {
  // Offset 1 ms: every scheduler's firings are aligned to the epoch, so each lands next to one tick
  // of Redis's clock (nearestTick), whichever runner added it.
  if (schedule.kind === 'every') return { every: schedule.everyMs, offset: 1 }
  return { pattern: schedule.pattern, tz: schedule.tz }
}

/**
 * Keeps the queue's cron schedulers those of the registry's jobs: now, and at each reload of the
 * jobs folder (every runner does; the same scheduler upserted twice is still one). Answers how to stop.
 */
export async function keepCronSchedules(
  queue: Queue,
  registry: JobRegistry,
  chainId: number,
  log: Logger,
): Promise<() => void> {
  const sync = () =>
    syncCronSchedules(queue, registry, chainId, log).catch((error: unknown) =>
      log.warn({ err: rootCauseFirst(error) }, 'could not update the cron schedules'),
    )
  await sync()
  const stop = registry.onChange(() => void sync())
  return () => void stop()
}

/**
 * Makes the queue's job schedulers those of the registry's cron jobs: one added for a new job, moved
 * for a changed schedule, removed for a job that is gone. Every runner does it at start and at each
 * reload: the same scheduler upserted twice is still one.
 */
export async function syncCronSchedules(
  queue: Queue,
  registry: JobRegistry,
  chainId: number,
  log: Logger,
): Promise<void> {
  const wanted = new Map<string, LoadedJob>()
  for (const loaded of registry.jobs)
    if (loaded.job.spec.type === 'cron') wanted.set(schedulerIdOf(loaded.externalJobId), loaded)
  for (const [id, loaded] of wanted) {
    const spec = loaded.job.spec
    if (spec.type !== 'cron') continue
    const parsed = parseSchedule(spec.schedule)
    if (!('schedule' in parsed)) continue
    const repeat = repeatOf(parsed.schedule)
    // A scheduler already as wanted, its next firing queued, is left alone: upserting it again would
    // move that firing by this host's clock (a runner with its clock ahead would hold it back).
    const existing = await queue.getJobScheduler(id)
    if (sameRepeat(existing, repeat) && (await firingQueued(queue, id, existing?.next))) continue
    const data: TickPayload = { kind: 'tick', chainId, externalJobId: loaded.externalJobId }
    // A tick's queue job is kept and retried as a request's: the requests queue's default job
    // options (the one retry policy, RUN_ATTEMPTS and RUN_BACKOFF_MS), which BullMQ applies to a
    // scheduler's jobs as to any other.
    await queue.upsertJobScheduler(id, repeat, { name: 'tick', data })
  }
  for (const scheduler of await queue.getJobSchedulers()) {
    const id = scheduler.key
    if (!id.startsWith('cron-') || wanted.has(id)) continue
    await queue.removeJobScheduler(id)
    log.info({ scheduler: id }, 'cron schedule removed: its job is gone')
  }
}

/**
 * Whether a scheduler's next firing is in the queue. Each firing carries the scheduler on (BullMQ adds
 * the next as it takes one): a failover to a replica that kept the scheduler but not that job leaves
 * a scheduler that never fires again, which is written again here.
 */
async function firingQueued(queue: Queue, id: string, next: number | undefined): Promise<boolean> {
  if (next === undefined) return false
  return (await queue.getJob(`repeat:${id}:${next}`)) !== undefined
}

function sameRepeat(
  existing: { every?: number; pattern?: string; tz?: string } | undefined,
  wanted: ReturnType<typeof repeatOf>,
): boolean {
  if (!existing) return false
  if ('every' in wanted) return existing.every === wanted.every && existing.pattern === undefined
  return existing.pattern === wanted.pattern && existing.tz === wanted.tz
}
