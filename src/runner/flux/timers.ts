import { setTimeout as delay } from 'node:timers/promises'
import { nextTickAfter } from '../ticks.ts'
import { heartbeatDue, type FluxTrigger } from './decision.ts'
import type { FluxJob } from './flux-job.ts'

/** A job's timers between looks: kept across a reload of the same job. */
export interface JobTimers {
  /** This process's clock (ms) at the job's last poll. */
  lastPollMs: number
  /** The drumbeat's next instant (ms on the chain's clock), and the schedule it was worked out from. */
  drumbeat?: { schedule: string; nextMs: number }
}

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
 * latest round started), then the poll. The drumbeat and the heartbeat go by the chain's clock, as
 * the rounds they answer do, so every node of a feed agrees when they are due whatever its host's
 * clock says; a drumbeat instant that passed before the job was first looked at is not made up, as
 * a node's cron ticker starts from its own start.
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
  if (
    job.idleTimerMs !== undefined &&
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
