import type { Logger } from '../../config/logger.ts'

/** While failures go on, one line this often (with how many failed meanwhile). */
const STILL_FAILING_EVERY_MS = 60_000

/** What a streak's lines say: when it begins, while it lasts, and the success that ends it. */
export interface StreakWords {
  began: string
  lasting: (failures: number, since: string) => string
  ended: (failures: number) => string
  /** The `state` field of the line that ends it ('acting', 'looking'). */
  endedState: string
}

/**
 * Failures that repeat, told by state rather than one at a time: a warning when they begin, one
 * every minute while they last (with how many failed since), and a line when something succeeds
 * again. A source or an RPC node away fails every look until it is back, and a line each would bury
 * the log.
 */
export class FailureStreak {
  private streak: { since: number; saidAt: number; failures: number } | undefined

  constructor(
    private readonly log: Logger,
    /** Fields every line of the streak carries (the job, the chain). */
    private readonly fields: Record<string, unknown>,
    private readonly words: StreakWords,
    private readonly now: () => number = Date.now,
  ) {}

  /** A failure; `fields` say what failed (its error, its trigger). */
  failed(fields: Record<string, unknown>): void {
    const now = this.now()
    if (this.streak === undefined) this.streak = { since: now, saidAt: now, failures: 0 }
    const streak = this.streak
    streak.failures++
    if (streak.failures > 1 && now - streak.saidAt < STILL_FAILING_EVERY_MS) return
    streak.saidAt = now
    this.log.warn(
      { ...this.fields, ...fields, state: 'failing', failures: streak.failures },
      streak.failures === 1
        ? this.words.began
        : this.words.lasting(streak.failures, new Date(streak.since).toISOString()),
    )
  }

  /** A success: says the streak it ends, if one ran. */
  succeeded(): void {
    if (this.streak === undefined) return
    const { since, failures } = this.streak
    this.streak = undefined
    this.log.info(
      { ...this.fields, state: this.words.endedState, failedMs: this.now() - since, failures },
      this.words.ended(failures),
    )
  }
}
