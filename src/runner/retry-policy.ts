import type { DefaultJobOptions } from 'bullmq'
import { isRetryable } from '../config/errors.ts'
import { DEFAULT_SETTINGS, type Settings } from '../config/settings.ts'
import { isRedisUnavailable } from '../queue/connection.ts'

/**
 * The one retry policy of a run: how often a request is tried (RUN_ATTEMPTS) and how long the first
 * wait is (RUN_BACKOFF_MS, doubling each time), read from the settings schema. Whether a failure is
 * tried again is what the failing task declared (its error's retryable flag, set where the failure
 * arose) or a Redis away (the run could not even be recorded); never its words.
 */
export interface RetryPolicy {
  attempts: number
  backoffMs: number
}

/** The policy as the settings schema declares it by default (RUN_ATTEMPTS, RUN_BACKOFF_MS). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = retryPolicyOf(DEFAULT_SETTINGS)

/** The policy the settings set. */
export function retryPolicyOf(
  settings: Pick<Settings, 'RUN_ATTEMPTS' | 'RUN_BACKOFF_MS'>,
): RetryPolicy {
  return { attempts: settings.RUN_ATTEMPTS, backoffMs: settings.RUN_BACKOFF_MS }
}

/** How every `requests` job is kept and retried (a replay's job too). */
export function requestJobOptions(policy: RetryPolicy = DEFAULT_RETRY_POLICY): DefaultJobOptions {
  return {
    // Gone once finished: the run record is what a finished request leaves (`runs`, `status`, the
    // metrics' requests_total). A late duplicate delivery is stopped before a job by the listeners'
    // shared consumed markers, and a job that runs anyway finds its run final and does nothing;
    // keeping the job would cost Redis commands on every request for nothing read.
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3600 },
    attempts: policy.attempts,
    backoff: { type: 'exponential', delay: policy.backoffMs },
  }
}

/** Whether a run's failure goes back to the queue for another try (while tries are left). */
export function mayRetry(error: unknown): boolean {
  return isRetryable(error) || isRedisUnavailable(error)
}

/** Every lease a runner process holds, derived from its one lock setting (RUNNER_LOCK_MS). */
export interface RunnerLeases {
  /** A requests job's BullMQ lock: a crashed process's request is taken over after about this long. */
  jobLockMs: number
  /** How often BullMQ looks for jobs whose lock lapsed: twice a lock, at least once a second. */
  stalledIntervalMs: number
  /**
   * A sender key's lease: at most 15 s, so a dead process's keys are taken over well inside a run's
   * ethtx timeout (maxTaskDuration), whatever the lock.
   */
  keyLeaseMs: number
  /**
   * A requester's admission slot: its crashed process's slots come back about when its requests are
   * taken over, and not before 5 s (a slot renewed every third of that must not lapse while it runs).
   */
  admissionLeaseMs: number
}

export function leasesFromLock(lockMs: number): RunnerLeases {
  return {
    jobLockMs: lockMs,
    stalledIntervalMs: Math.max(1_000, Math.floor(lockMs / 2)),
    keyLeaseMs: Math.min(lockMs, 15_000),
    admissionLeaseMs: Math.max(lockMs, 5_000),
  }
}
