import { FeedrunnerError } from '../config/errors.ts'
import type { NodeBudget } from '../net/decode-budget.ts'

/**
 * A walk over one CBOR item's headers, before cbor-x decodes it: it builds nothing, counts every value
 * the decode would build against the budget, and refuses every tag but 2 and 3 (big numbers), the
 * only ones a Chainlink request carries (Chainlink's CBOR.sol writes strings, integers, big numbers,
 * byte strings, arrays and maps).
 *
 * Why: cbor-x also reads tags that refer to values decoded earlier (28/29 shared values, 51/6 packed
 * values, the prefix and suffix tags that concatenate them). A value shared twice at each of 24 levels
 * is 266 bytes that expand to 2^24 values when they are copied into a plain object, and took a node
 * from 194 MB to 3.7 GB. A Chainlink node's decoder does not resolve these tags either.
 * Nesting is bounded here too, so a walk of a hostile buffer never goes deeper than `maxDepth`.
 */
export class CborShapeError extends FeedrunnerError {
  override readonly name = 'CborShapeError'
  constructor(
    message: string,
    /** `malformed`: not CBOR at all; `refused`: CBOR that a request may not carry. */
    readonly problem: 'malformed' | 'refused',
  ) {
    super(message, { kind: 'bad_input' })
  }
}

/** Tags a request may carry: unsigned and negative big numbers (RFC 8949 3.4.3). */
const ALLOWED_TAGS: ReadonlySet<number> = new Set([2, 3])

/** Tags that refer to other values, named in the refusal because they are what makes a bomb. */
const REFERENCE_TAGS: ReadonlyMap<number, string> = new Map([
  [28, 'a shared value, which tag 29 refers back to'],
  [29, 'a reference to a shared value (tag 28)'],
  [6, 'a reference to a packed value (tag 51)'],
  [51, 'a table of packed values, which tag 6 refers back to'],
  [25, 'a reference to an earlier string'],
  [256, 'a namespace of string references'],
])

const BREAK = 0xff

export interface CborWalk {
  budget: NodeBudget
  maxDepth: number
  /** Added to a byte position in messages (-1 when the caller put a header byte in front). */
  positionOffset?: number
}

/** Walks the item at the start of `bytes`; returns where it ends. Throws CborShapeError or DecodeBudgetError. */
export function walkCborItem(bytes: Uint8Array, walk: CborWalk): number {
  return new Walker(bytes, walk).item(0)
}

class Walker {
  private at = 0
  constructor(
    private readonly bytes: Uint8Array,
    private readonly walk: CborWalk,
  ) {}

  item(depth: number): number {
    if (depth > this.walk.maxDepth)
      throw new CborShapeError(`nests deeper than ${this.walk.maxDepth} levels`, 'refused')
    const start = this.at
    const initial = this.byte()
    const major = initial >> 5
    const info = initial & 0x1f
    if (major === 7) {
      if (info === 31) this.malformed(start, 'a break outside an indefinite-length item')
      const value = this.argument(info, start)
      if (info < 20 || info === 24) this.simpleValue(info < 20 ? info : value, start)
      this.walk.budget.take()
      return this.at
    }
    if (info === 31) {
      // cbor-x reads no indefinite-length strings (Chainlink's CBOR.sol writes none).
      if (major === 4 || major === 5) this.indefiniteContainer(major, depth)
      else if (major === 2 || major === 3)
        this.malformed(start, 'an indefinite-length string, which is not read')
      else this.malformed(start, `major type ${major} cannot have an indefinite length`)
      return this.at
    }
    const value = this.argument(info, start)
    switch (major) {
      case 0:
      case 1:
        this.walk.budget.take()
        break
      case 2:
      case 3:
        this.skip(value, start)
        this.walk.budget.takeString(value)
        break
      case 4:
      case 5: {
        const items = major === 5 ? value * 2 : value
        if (items > this.bytes.length - this.at)
          this.malformed(start, `claims ${value} entries, more than the bytes left`)
        this.walk.budget.take()
        for (let index = 0; index < items; index++) this.item(depth + 1)
        break
      }
      case 6:
        this.tag(value, start, depth)
        break
    }
    return this.at
  }

  private tag(tag: number, start: number, depth: number): void {
    if (!ALLOWED_TAGS.has(tag)) {
      const meaning = REFERENCE_TAGS.get(tag)
      throw new CborShapeError(
        `uses CBOR tag ${tag}${meaning ? ` (${meaning})` : ''} at byte ${this.position(start)}: a Chainlink request carries only tags 2 and 3 (big numbers)${meaning ? ', and a reference would be rebuilt as a copy each time it is used' : ''}`,
        'refused',
      )
    }
    const content = this.bytes[this.at]
    if (content === undefined || content >> 5 !== 2)
      this.malformed(start, `tag ${tag} (a big number) must hold a byte string`)
    // The big number replaces its tag: no level deeper.
    this.item(depth)
  }

  /**
   * A simple value other than false, true, null and undefined (20 to 23): none is assigned a meaning
   * a request could carry, and cbor-x reads them as references into a table of packed values
   * ("No packed values available").
   */
  private simpleValue(value: number, start: number): never {
    throw new CborShapeError(
      `uses CBOR simple value ${value} at byte ${this.position(start)}: a Chainlink request carries no simple value but false, true, null and undefined`,
      'refused',
    )
  }

  private indefiniteContainer(major: number, depth: number): void {
    this.walk.budget.take()
    let items = 0
    while (this.peek() !== BREAK) {
      this.item(depth + 1)
      items++
    }
    this.at++
    if (major === 5 && items % 2 !== 0) this.malformed(this.at - 1, 'a map ends after a key')
  }

  /**
   * The header's argument: a length, a count, a tag or an integer's value (approximate past 2^53,
   * which only an integer may be: a length that large is more than the bytes left anyway).
   */
  private argument(info: number, start: number): number {
    if (info < 24) return info
    if (info > 27) this.malformed(start, `reserved additional information ${info}`)
    const size = 1 << (info - 24)
    let value = 0
    for (let index = 0; index < size; index++) value = value * 256 + this.byte()
    return value
  }

  private skip(length: number, start: number): void {
    if (length > this.bytes.length - this.at)
      this.malformed(start, `a string of ${length} bytes, more than the bytes left`)
    this.at += length
  }

  private byte(): number {
    const value = this.bytes[this.at]
    if (value === undefined) this.malformed(this.at, 'the data ends inside an item')
    this.at++
    return value
  }

  private peek(): number {
    const value = this.bytes[this.at]
    if (value === undefined) this.malformed(this.at, 'the data ends inside an item')
    return value
  }

  private position(at: number): number {
    return Math.max(0, at + (this.walk.positionOffset ?? 0))
  }

  private malformed(at: number, what: string): never {
    throw new CborShapeError(`${what} at byte ${this.position(at)}`, 'malformed')
  }
}
