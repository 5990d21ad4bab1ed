import { isEmptyBloom } from './logs-bloom.ts'
import type { HeadHeader } from './head-header.ts'

/** Headers kept: more than a listener falls behind the head between two scans. */
const RECENT_HEADERS_KEPT = 256

/**
 * The last block headers a reader of one chain was given (`newHeads` notifications, heads and blocks
 * it read), by number: from them a scan knows the canonical header of each block below its head by
 * linking parent hashes down, with no call. A header of a chain that was reorganised away never links
 * to the new head, so it cannot answer; a newer header of the same number replaces it.
 */
export class RecentHeaders {
  private readonly byNumber = new Map<number, HeadHeader>()
  private highest = -1
  private filledBlooms = false

  constructor(private readonly kept = RECENT_HEADERS_KEPT) {}

  /**
   * Whether a header with a bloom that has a bit set was given: the chain's nodes fill their blooms
   * (some chains leave every bloom zero, and a zero bloom there proves nothing).
   */
  get bloomsFilled(): boolean {
    return this.filledBlooms
  }

  note(header: HeadHeader): void {
    this.byNumber.set(header.number, header)
    if (header.logsBloom !== undefined && !isEmptyBloom(header.logsBloom)) this.filledBlooms = true
    this.highest = Math.max(this.highest, header.number)
    // Pruned in batches: an older block read late (a checkpoint's) may sit anywhere in the map's order.
    if (this.byNumber.size > 2 * this.kept)
      for (const number of this.byNumber.keys())
        if (number <= this.highest - this.kept) this.byNumber.delete(number)
  }

  /**
   * The header of block `number` on the chain ending in `head`, when the kept headers link down to it
   * parent by parent; undefined when a link is missing (or `number` is above the head).
   */
  canonicalHeader(head: HeadHeader, number: number): HeadHeader | undefined {
    if (number === head.number) return head
    const child = this.childOf(head, number)
    if (!child) return undefined
    const header = this.byNumber.get(number)
    return header?.hash === child.parentHash ? header : undefined
  }

  /**
   * The hash of block `number` on the chain ending in `head`: its linked header's, or the parent hash
   * of its child's when the child links but the block's own header was never given.
   */
  canonicalHash(head: HeadHeader, number: number): string | undefined {
    if (number === head.number) return head.hash
    return this.childOf(head, number)?.parentHash
  }

  /** The header of block `number + 1` linked down from `head`, or undefined. */
  private childOf(head: HeadHeader, number: number): HeadHeader | undefined {
    if (number >= head.number || number < 0) return undefined
    let child = head
    while (child.number - 1 > number) {
      const parent = this.byNumber.get(child.number - 1)
      if (parent?.hash !== child.parentHash) return undefined
      child = parent
    }
    return child
  }
}
