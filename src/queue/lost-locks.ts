import { ErrorCode, type Worker } from 'bullmq'
import { countLostLocks } from '../metrics/index.ts'

/** BullMQ's codes on the error of a call that settles a job whose lock is gone or another's. */
const LOST_LOCK_CODES: ReadonlySet<number> = new Set([
  ErrorCode.JobLockNotExist,
  ErrorCode.JobLockMismatch,
])

/**
 * Tells which of a BullMQ worker's errors say that a job's lock lapsed (while Redis was away, or the
 * process paused past the lock's duration), by kind, not by words, and counts them
 * (feedrunner_queue_lost_locks_total). The stalled-job check runs such a job again, and its run is
 * kept once by its record and idempotency key: part of an outage already reported, not a failure of
 * its own.
 *
 * BullMQ says it two ways. A call that settles the job fails with BullMQ's code. A renewal that
 * failed comes as a plain Error, one a job, emitted in the same turn right after the worker's
 * `lockRenewalFailed` event names those jobs: the errors announced are counted down as they come.
 */
export class LostLocks {
  private announced = 0

  constructor(private readonly worker: Worker) {
    worker.on('lockRenewalFailed', (jobIds) => {
      this.announced += jobIds.length
      countLostLocks(worker.name, jobIds.length)
    })
  }

  /** Whether `error`, one of the worker's, says a lock lapsed. */
  tells(error: Error): boolean {
    if (this.announced > 0) {
      this.announced--
      return true
    }
    const code = (error as { code?: unknown }).code
    if (typeof code !== 'number' || !LOST_LOCK_CODES.has(code)) return false
    countLostLocks(this.worker.name, 1)
    return true
  }
}
