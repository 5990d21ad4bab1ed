/** While failures go on, one line this often (with how many failed meanwhile). */
export const STILL_FAILING_EVERY_MS = 60_000

/** What to say of a failure: that failures began, or that they still go on. */
export interface StreakReport {
  state: 'began' | 'lasting'
  /** When the first failure of the streak was (the clock's milliseconds). */
  since: number
  /** Failures in the streak so far, this one included. */
  failures: number
}

/**
 * Failures that repeat, told by state rather than one at a time: a line when they begin, one every
 * `everyMs` while they last, and one when something succeeds again. A source or an RPC node away
 * fails every look until it is back, and a line each would bury the log.
 */
export class FailureStreak {
  private streak: { since: number; saidAt: number; failures: number } | undefined

  constructor(
    private readonly now: () => number = Date.now,
    private readonly everyMs: number = STILL_FAILING_EVERY_MS,
  ) {}

  /** Counts a failure; answers what to say of it, or undefined when nothing is due. */
  failed(): StreakReport | undefined {
    const now = this.now()
    if (this.streak === undefined) {
      this.streak = { since: now, saidAt: now, failures: 1 }
      return { state: 'began', since: now, failures: 1 }
    }
    this.streak.failures++
    if (now - this.streak.saidAt < this.everyMs) return undefined
    this.streak.saidAt = now
    return { state: 'lasting', since: this.streak.since, failures: this.streak.failures }
  }

  /** A success: the streak it ends (how long it lasted, how many failed), undefined when none ran. */
  succeeded(): { failedMs: number; failures: number } | undefined {
    if (this.streak === undefined) return undefined
    const { since, failures } = this.streak
    this.streak = undefined
    return { failedMs: this.now() - since, failures }
  }
}
