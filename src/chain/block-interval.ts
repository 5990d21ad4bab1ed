/** What the estimate reads of a head: its number and the chain's time in it (unix seconds). */
export interface TimedHead {
  number: number
  timestamp: number
}

/** Steps between heads the estimate keeps: recent enough to follow a chain that changes its pace. */
const STEPS_KEPT = 31

/**
 * The chain's block interval, by its own clock: the shortest, over the last steps between the heads
 * seen, of the time the block timestamps moved per block. The shortest: a chain on a clock (12 s,
 * 2 s) has no step below its block time, and a missed slot or a clock jump (a dev chain's
 * `evm_increaseTime`, a chain halted for a while) only makes one step longer; a chain that makes a
 * block whenever a transaction comes (anvil's automine, an L2 sequencer) has steps of 0 or 1 s, so
 * it is never taken for a slow one, whatever the quiet spells between its blocks.
 */
export class BlockInterval {
  private last: TimedHead | undefined
  private readonly steps: number[] = []

  observe(head: TimedHead): void {
    const last = this.last
    if (last && head.number <= last.number) {
      // A reorg back to a lower head: later steps are measured from it.
      if (head.number < last.number) this.last = head
      return
    }
    if (last) {
      this.steps.push(Math.max(0, head.timestamp - last.timestamp) / (head.number - last.number))
      if (this.steps.length > STEPS_KEPT) this.steps.shift()
    }
    this.last = head
  }

  /** Seconds a block at the least (0 until two heads were seen). */
  secondsPerBlock(): number {
    return this.steps.length === 0 ? 0 : Math.min(...this.steps)
  }
}
