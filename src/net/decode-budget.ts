import { FeedrunnerError } from '../config/errors.ts'

/**
 * What one decode may build, counted in nodes: every value a decoder makes (a map or object, an
 * array, a number, a boolean, null, a string) is one node, and a text or byte string one more for
 * every 32 bytes it holds. A byte cap bounds what a decoder reads; this bounds what it builds, which
 * a format with references (CBOR's shared values, ABI offsets that point at the same place twice)
 * can make millions of times larger: a 266-byte request can expand to 2^24 values.
 *
 * A budget is a plain value made for one decode (no state outside it), so a decoder that takes one
 * runs the same in a worker thread.
 */
export class NodeBudget {
  private used = 0
  constructor(
    /** The most nodes the decode may build (DECODE_MAX_NODES). */
    readonly max: number,
    /** What is decoded, for the message: `data (CBOR)`, `the body (JSON)`, `the log (ABI)`. */
    readonly what: string,
  ) {}

  /** Counts `count` more nodes; throws DecodeBudgetError past the budget. */
  take(count = 1): void {
    this.used += count
    if (this.used > this.max) throw new DecodeBudgetError(this.what, this.max)
  }

  /** A text or byte string of `bytes` bytes. */
  takeString(bytes: number): void {
    this.take(stringNodes(bytes))
  }

  get count(): number {
    return this.used
  }
}

/** The nodes a string of `bytes` bytes counts for. */
export function stringNodes(bytes: number): number {
  return 1 + Math.floor(bytes / 32)
}

/** A decode that would build more than its budget: the input's fault, final. */
export class DecodeBudgetError extends FeedrunnerError {
  override readonly name = 'DecodeBudgetError'
  constructor(
    readonly what: string,
    readonly max: number,
  ) {
    super(
      `${what} would build more than ${max} values (DECODE_MAX_NODES); it was refused before they were built`,
      { kind: 'bad_input', bound: 'DECODE_MAX_NODES' },
    )
  }
}
