import type { FaultWindow } from './history.ts'
import type { Part, StopOutcome } from './part.ts'
import type { RequestBook } from './request-book.ts'
import type { Schedule } from './schedule.ts'
import type { ChaosStack } from './stack.ts'

/** What a running schedule shares with its faults, and what they leave for the invariants. */
export interface RunContext {
  readonly stack: ChaosStack
  readonly schedule: Schedule
  readonly book: RequestBook
  /** When the schedule's clock started (epoch ms). */
  readonly startedAt: number
  readonly stops: StopOutcome[]
  readonly startFailures: string[]
  /** Transactions a reorg took away for good: their nonces are free to be signed anew. */
  readonly gone: Set<string>
  /** Each fault done so far, from its first step to its last. */
  readonly faults: FaultWindow[]
  /** One line of the schedule's timeline (printed with its report). */
  note(line: string): void
}

/** Starts a part again; one that does not come back is a finding, and the schedule goes on. */
export async function restart(context: RunContext, part: Part): Promise<void> {
  try {
    await part.start()
  } catch (error) {
    context.startFailures.push((error as Error).message.slice(0, 4_000))
  }
}

/** Stops a part with `signal` and keeps how it ended. */
export async function stopPart(
  context: RunContext,
  part: Part,
  signal: StopOutcome['signal'],
): Promise<void> {
  const outcome = await part.stop(signal)
  if (outcome) context.stops.push(outcome)
}
