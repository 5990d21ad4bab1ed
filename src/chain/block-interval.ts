/** What the estimate reads of a head: its number and the chain's time in it (unix seconds). */
export interface TimedHead {
  number: number
  timestamp: number
}

/** Steps between heads the estimate keeps: recent enough to follow a chain that changes its pace. */
const STEPS_KEPT = 31
/** Steps it needs before it says anything: one quiet spell is no clock. */
export const STEPS_NEEDED = 8

/**
 * The chain's block time, by its own clock, when it has one: a chain on a clock (12 s, 2 s) moves its
 * block timestamps by its block time a block, or by a multiple where a slot was missed. Over the last
 * steps between the heads seen, the shortest step is the block time when no step is more than twice
 * it (a missed slot); otherwise the chain makes its blocks when it likes (anvil's automine, a rollup's
 * sequencer that makes a block whenever a transaction comes, a clock jump), and nothing is said of when
 * its next block comes: 0. A reorg back to a lower head starts the steps again.
 */
export class BlockInterval {
  private last: TimedHead | undefined
  private readonly steps: number[] = []
  /** For the last heads, when each was first seen (a monotonic clock, ms) less its chain time. */
  private readonly sightingLags: number[] = []

  /** A head, and when it was first seen (performance.now()) if the caller keeps that. */
  observe(head: TimedHead, seenAt?: number): void {
    const last = this.last
    if (last && head.number <= last.number) {
      if (head.number < last.number) {
        this.last = head
        this.steps.length = 0
      }
      return
    }
    if (last) {
      this.steps.push(Math.max(0, head.timestamp - last.timestamp) / (head.number - last.number))
      if (this.steps.length > STEPS_KEPT) this.steps.shift()
    }
    if (seenAt !== undefined) {
      this.sightingLags.push(seenAt - head.timestamp * 1_000)
      if (this.sightingLags.length > STEPS_KEPT) this.sightingLags.shift()
    }
    this.last = head
  }

  /**
   * When (on the clock of `seenAt`) the block after the last head can first be seen: its chain time
   * plus the least time from a block's chain time to its first sighting over the last heads. Reading
   * by it, a poller finds each block as soon as its pace allows and never drifts: timing the next
   * read from when the last block was seen adds each sighting's lateness to the next, until a block
   * is missed. Undefined while the chain keeps no block time or no sighting was kept. The offset of
   * the host's clock to the chain's is in the lags, and only the rate of a monotonic clock matters.
   */
  nextBlockSeenFrom(): number | undefined {
    const seconds = this.secondsPerBlock()
    if (seconds === 0 || !this.last || this.sightingLags.length === 0) return undefined
    return (this.last.timestamp + seconds) * 1_000 + Math.min(...this.sightingLags)
  }

  /** The chain's block time in seconds, or 0 when it keeps none (or too few heads were seen). */
  secondsPerBlock(): number {
    if (this.steps.length < STEPS_NEEDED) return 0
    const shortest = Math.min(...this.steps)
    return this.steps.every((step) => step <= 2 * shortest) ? shortest : 0
  }
}
