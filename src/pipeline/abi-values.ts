import type { ParamType } from 'ethers'
import type { NodeBudget } from '../net/decode-budget.ts'

/**
 * Counts the values an ABI decode of `data` as `types` would build, against the budget, without
 * building any, before ethers decodes it. In the ABI encoding a dynamic value is an offset to where it
 * lies, and nothing stops two offsets from pointing at the same place: an array of two offsets to one
 * array of two offsets to ..., 24 levels deep, is 2.3 kB of log data that decodes to 2^24 values (the
 * ABI cousin of CBOR's alias bomb). ethers refuses to read more than 1,024 times the data's
 * length, which for a log of a few hundred kB is still hundreds of MB of values.
 *
 * Every value visited takes at least one node, so the walk itself stops within the budget. Where the
 * data is too short for what it claims, the walk stops counting: ethers refuses that data itself.
 */
export function countAbiValues(
  types: readonly ParamType[],
  data: Uint8Array,
  budget: NodeBudget,
): void {
  new AbiWalk(data, budget).tuple(types, 0)
}

const WORD = 32

class AbiWalk {
  constructor(
    private readonly data: Uint8Array,
    private readonly budget: NodeBudget,
  ) {}

  /** The values of `types` laid out one after another from `base` (a tuple, or an array's items). */
  tuple(types: readonly ParamType[], base: number): void {
    let head = base
    for (const type of types) {
      if (!isDynamic(type)) {
        this.budget.take(staticNodes(type))
        head += staticBytes(type)
        continue
      }
      const offset = this.word(head)
      head += WORD
      if (offset === undefined) return
      this.dynamic(type, base + offset)
    }
  }

  private dynamic(type: ParamType, at: number): void {
    if (type.isArray()) {
      const child = type.arrayChildren
      const fixed = type.arrayLength >= 0
      const count = fixed ? type.arrayLength : this.word(at)
      const itemsAt = fixed ? at : at + WORD
      if (count === undefined) return
      this.budget.take()
      this.items(child, count, itemsAt)
    } else if (type.isTuple()) {
      this.budget.take()
      this.tuple(type.components, at)
    } else {
      // bytes or string: a length word, then the bytes.
      const length = this.word(at)
      if (length === undefined || length > this.data.length - at - WORD) return
      this.budget.takeString(length)
    }
  }

  /** `count` items of `child` from `base`, as an array's items are laid out. */
  private items(child: ParamType, count: number, base: number): void {
    const headBytes = isDynamic(child) ? WORD : staticBytes(child)
    // ethers refuses an array that claims more items than the data can hold.
    if (count * headBytes > this.data.length - base) return
    if (!isDynamic(child)) {
      this.budget.take(count * staticNodes(child))
      return
    }
    for (let index = 0; index < count; index++) {
      const offset = this.word(base + index * WORD)
      if (offset === undefined) return
      this.dynamic(child, base + offset)
    }
  }

  /** The 32-byte word at `at` as a number, or undefined past the data or beyond 2^53. */
  private word(at: number): number | undefined {
    if (at < 0 || at + WORD > this.data.length) return undefined
    let value = 0
    for (let index = 0; index < WORD; index++) {
      value = value * 256 + this.data[at + index]!
      if (value > Number.MAX_SAFE_INTEGER) return undefined
    }
    return value
  }
}

function isDynamic(type: ParamType): boolean {
  if (type.isArray()) return type.arrayLength < 0 || isDynamic(type.arrayChildren)
  if (type.isTuple()) return type.components.some(isDynamic)
  return type.baseType === 'bytes' || type.baseType === 'string'
}

/** A static value's size in the head. */
function staticBytes(type: ParamType): number {
  if (type.isArray()) return type.arrayLength * staticBytes(type.arrayChildren)
  if (type.isTuple()) return type.components.reduce((sum, item) => sum + staticBytes(item), 0)
  return WORD
}

/** The values a static value decodes to (an array or a tuple is one more than its items). */
function staticNodes(type: ParamType): number {
  if (type.isArray()) return 1 + type.arrayLength * staticNodes(type.arrayChildren)
  if (type.isTuple()) return 1 + type.components.reduce((sum, item) => sum + staticNodes(item), 0)
  return 1
}
