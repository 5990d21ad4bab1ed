import type { Queue } from 'bullmq'
import { rootCauseFirst } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import { parseSchedule, type CronSchedule } from '../pipeline/index.ts'
import type { JobRegistry } from './job-registry.ts'
import { dueTick, firingJobId, nextTickAfter, type TickPayload } from './ticks.ts'

/** Redis's clock as this process reads it; undefined until Redis first answered. */
export interface TickClock {
  now(): number | undefined
}

/** The longest sleep between two looks: a job a reload added is seen within it. */
const LOOK_EVERY_MS = 1_000
/** Woken this far past a tick's instant, so that the look finds it due. */
const PAST_TICK_MS = 5

/** A cron job as the ticker watches it: its schedule's text, and its next instant (Redis's time). */
interface WatchedJob {
  schedule: string
  parsed: CronSchedule
  next: number
}

export interface CronTicker {
  /** No look after this one; a firing being added goes on (it is one queue job, whoever adds it). */
  stop(): void
}

/**
 * Fires each cron job's ticks by Redis's clock. Every runner looks (at each of its jobs' next instant,
 * and at least once a second), and when a job's next tick has fallen due by Redis's time it adds that
 * tick's firing to the requests queue under one id per tick (`firingJobId`): the runners' adds are one
 * queue job, taken by whichever worker is free; which ticks it runs is then claimed in Redis
 * (claimTicks). Nothing is timed by a host's wall clock: the looks sleep on the monotonic clock and
 * compare Redis's time, so a runner minutes ahead or behind fires on time, and a failover or a flush
 * that loses a firing costs that tick's firing only (the next is added as it falls due).
 *
 * BullMQ's job schedulers, used before, date each next firing by the wall clock of the host that
 * takes the current one: a runner 45 s ahead dated it 45 s late for the others, and once it died they
 * fired nothing for minutes. A runner that sees a job first (at its start, at a reload) fires from its
 * next tick on: a tick due before it looked is not made up (Chainlink's behaviour). A job's next
 * instant is worked out once a tick, not at each look: parsing 100 cron patterns every second cost
 * the idle runner 80 ms of CPU a second (`BENCH_PHASES=cron npm run bench`).
 */
export async function startCronTicker(
  queue: Queue,
  registry: JobRegistry,
  chainId: number,
  clock: TickClock,
  log: Logger,
): Promise<CronTicker> {
  // Their firings name no tick and run nothing (runTick), so a Redis away at start only costs a line.
  await removeSchedulersOfEarlierReleases(queue, log).catch((error: unknown) =>
    log.warn(
      { err: rootCauseFirst(error) },
      'could not look for cron schedulers of an earlier release',
    ),
  )
  const watched = new Map<string, WatchedJob>()
  let failing = false

  /** Adds the firings that fell due; answers how long to sleep before the next look. */
  async function look(): Promise<number> {
    const now = clock.now()
    if (now === undefined) return LOOK_EVERY_MS
    let sleepMs = LOOK_EVERY_MS
    const seen = new Set<string>()
    for (const loaded of registry.jobs) {
      const spec = loaded.job.spec
      if (spec.type !== 'cron') continue
      const id = loaded.externalJobId
      let job = watched.get(id)
      // Seen first, or its schedule changed by a reload: from its next tick on.
      if (job?.schedule !== spec.schedule) {
        const parsed = parseSchedule(spec.schedule)
        if (!('schedule' in parsed)) continue
        job = { schedule: spec.schedule, parsed: parsed.schedule, next: 0 }
        job.next = nextTickAfter(job.parsed, now)
        watched.set(id, job)
      } else if (now >= job.next) {
        const tick = dueTick(job.parsed, now)
        const data: TickPayload = { kind: 'tick', chainId, externalJobId: id, tick }
        // The requests queue's default job options apply (RUN_ATTEMPTS, RUN_BACKOFF_MS).
        await queue.add('tick', data, { jobId: firingJobId(id, tick) })
        job.next = nextTickAfter(job.parsed, now)
      }
      seen.add(id)
      sleepMs = Math.min(sleepMs, job.next - now + PAST_TICK_MS)
    }
    for (const id of watched.keys()) if (!seen.has(id)) watched.delete(id)
    return Math.max(sleepMs, 0)
  }

  let stopped = false
  let timer: NodeJS.Timeout | undefined
  const run = () => {
    void look()
      .then((sleepMs) => {
        if (failing) log.info('cron firings are added again')
        failing = false
        return sleepMs
      })
      .catch((error: unknown) => {
        // Redis's outage is the connection's to report; this says only that firings wait for it.
        if (!failing && !stopped)
          log.warn({ err: rootCauseFirst(error) }, 'could not add a cron firing')
        failing = true
        return LOOK_EVERY_MS
      })
      .then((sleepMs) => {
        if (!stopped) timer = setTimeout(run, sleepMs)
      })
  }
  run()
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}

/**
 * Releases before this one kept a BullMQ job scheduler per cron job (`cron-<externalJobID>`); left in
 * place, it would go on adding firings timed by host clocks beside the ticker's.
 */
async function removeSchedulersOfEarlierReleases(queue: Queue, log: Logger): Promise<void> {
  for (const scheduler of await queue.getJobSchedulers()) {
    if (!scheduler.key.startsWith('cron-')) continue
    await queue.removeJobScheduler(scheduler.key)
    log.info({ scheduler: scheduler.key }, 'cron scheduler of an earlier release removed')
  }
}
