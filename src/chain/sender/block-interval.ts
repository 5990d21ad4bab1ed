import type { Head } from './model.ts'

/** Heads the estimate spans at most: recent enough to follow a chain that changes its pace. */
const SPAN_BLOCKS = 32

/**
 * The chain's block interval, by its own clock: the time its block timestamps moved over the last
 * heads seen, per block. A chain that mines only when a transaction arrives (anvil's automine) reads
 * as fast as its transactions come; one with 12 s blocks reads 12.
 */
export class BlockInterval {
  private first: Pick<Head, 'number' | 'timestamp'> | undefined
  private last: Pick<Head, 'number' | 'timestamp'> | undefined

  observe(head: Head): void {
    if (this.last && head.number <= this.last.number) {
      // A reorg back to a lower head: the span starts again from it.
      if (head.number < this.last.number) this.first = this.last = head
      return
    }
    this.first ??= head
    this.last = head
    if (head.number - this.first.number > SPAN_BLOCKS) {
      // The span slides to the last SPAN_BLOCKS, its start's time taken at the pace seen so far.
      const pace = this.secondsPerBlock()
      this.first = {
        number: head.number - SPAN_BLOCKS,
        timestamp: head.timestamp - pace * SPAN_BLOCKS,
      }
    }
  }

  /** Seconds a block, over the span seen (0 until two heads were). */
  secondsPerBlock(): number {
    if (!this.first || !this.last || this.last.number === this.first.number) return 0
    return (
      Math.max(0, this.last.timestamp - this.first.timestamp) /
      (this.last.number - this.first.number)
    )
  }
}
