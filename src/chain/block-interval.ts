/** What the estimate reads of a head: its number and the chain's time in it (unix seconds). */
export interface TimedHead {
  number: number
  timestamp: number
}

/** Steps between heads the estimate keeps: recent enough to follow a chain that changes its pace. */
const STEPS_KEPT = 31

/**
 * The chain's block interval, by its own clock: the median, over the last steps between the heads
 * seen, of the time the block timestamps moved per block. The median, as a chain's clock can jump
 * (a dev chain's `evm_increaseTime`, a chain halted for a while): one step of 300 s among 2 s ones
 * does not make the chain a slow one. A chain that mines only when a transaction arrives (anvil's
 * automine) reads as fast as its transactions come; one with 12 s blocks reads 12.
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

  /** Seconds a block (0 until two heads were seen). */
  secondsPerBlock(): number {
    if (this.steps.length === 0) return 0
    const sorted = [...this.steps].sort((a, b) => a - b)
    const middle = sorted.length >> 1
    return sorted.length % 2 === 1
      ? (sorted[middle] as number)
      : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
  }
}
