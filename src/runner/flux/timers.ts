import { setTimeout as delay } from 'node:timers/promises'
import { nextTickAfter } from '../ticks.ts'
import { heartbeatDue, type FluxTrigger } from './decision.ts'
import type { FluxJob } from './flux-job.ts'

/** A job's timers between looks: kept across a reload of the same job. */
export interface JobTimers {
  /** This process's clock (ms) at the job's last poll. */
  lastPollMs: number
  /** The drumbeat's next instant (ms on the chain's clock), and the schedule it came from. */
  drumbeat?: { schedule: string; nextMs: number }
  /** After a heartbeat that failed: not tried again before `atMs` (this process's clock). */
  retry?: { atMs: number; waitMs: number }
}

/** Chainlink's retry ticker after a failed heartbeat: from a minute, doubling up to an hour. */
const RETRY_FIRST_MS = 60_000
const RETRY_MOST_MS = 3_600_000

/** What a look knows of the clocks: the chain's (seconds) and this process's (ms). */
export interface LookClocks {
  chainNow: number
  /** When the aggregator's latest round started (unix seconds): the heartbeat counts from it. */
  lastStartedAt: number
  nowMs: number
}

/**
 * Which of the job's timers is due at this look, if any, in Chainlink's order: the drumbeat (a cron
 * schedule, enabled only with the idle timer disabled), the heartbeat (the idle period after the
 * latest round started; after a failed one, not before its retry), then the poll. The drumbeat and
 * the heartbeat go by the chain's clock, as the rounds they answer do, so every node of a feed
 * agrees when they are due whatever its host's clock says; a drumbeat instant that passed before
 * the job was first looked at is not made up, as a node's cron ticker starts from its own start.
 */
export function dueTrigger(
  job: FluxJob,
  timers: JobTimers,
  clocks: LookClocks,
): FluxTrigger | undefined {
  if (job.drumbeat) {
    const chainMs = clocks.chainNow * 1000
    const kept = timers.drumbeat
    if (kept === undefined || kept.schedule !== job.drumbeat.schedule.text) {
      timers.drumbeat = {
        schedule: job.drumbeat.schedule.text,
        nextMs: nextTickAfter(job.drumbeat.schedule, chainMs),
      }
    } else if (chainMs >= kept.nextMs) {
      kept.nextMs = nextTickAfter(job.drumbeat.schedule, chainMs)
      return 'drumbeat'
    }
  }
  const retrying = timers.retry !== undefined && clocks.nowMs < timers.retry.atMs
  if (
    job.idleTimerMs !== undefined &&
    !retrying &&
    heartbeatDue(clocks.chainNow, clocks.lastStartedAt, job.idleTimerMs)
  )
    return 'idle'
  if (job.pollTimerMs !== undefined && clocks.nowMs - timers.lastPollMs >= job.pollTimerMs) {
    timers.lastPollMs = clocks.nowMs
    return 'poll'
  }
  return undefined
}

/**
 * After an act: a heartbeat that failed (its source or the chain away) is tried again after a wait
 * that doubles, as Chainlink's retry ticker does (a minute at first, an hour at most, neither
 * longer than the idle period), not at every look; any act that did not fail ends the wait. The
 * poll and the drumbeat keep their own times.
 */
export function afterAct(
  job: FluxJob,
  timers: JobTimers,
  act: { trigger: FluxTrigger; ok: boolean },
  nowMs: number,
): void {
  if (act.ok) {
    timers.retry = undefined
    return
  }
  if (act.trigger !== 'idle') return
  const idle = job.idleTimerMs ?? RETRY_MOST_MS
  const first = Math.min(RETRY_FIRST_MS, idle)
  const waitMs = timers.retry
    ? Math.min(timers.retry.waitMs * 2, Math.min(RETRY_MOST_MS, idle))
    : first
  timers.retry = { atMs: nowMs + waitMs, waitMs }
}

/**
 * Before a drumbeat round, Chainlink waits a random part of drumbeatRandomDelay, so that the nodes
 * of a feed, ticking at the same instant, do not each start a round: the first to end its wait
 * starts it, the others answer it. Says whether it waited (the round is then read again).
 */
export async function drumbeatPause(job: FluxJob, signal: AbortSignal): Promise<boolean> {
  const most = job.drumbeat?.randomDelayMs ?? 0
  if (most <= 0) return false
  await delay(Math.floor(Math.random() * most), undefined, { signal })
  return true
}
