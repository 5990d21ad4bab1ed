import { concat, EventFragment, hexlify, toBeHex, zeroPadValue } from 'ethers'

/**
 * Inputs that are small to send and huge to decode (issue 38): the CBOR alias bomb a requester puts
 * in an OracleRequest, and its JSON and ABI cousins. Each says how much its decode would build.
 */

/**
 * An OracleRequest's CBOR parameters (a diet map body: key "a", then the bomb) whose value uses shared
 * references: at each of `levels` levels, an array of two items, the next level marked shareable
 * (tag 28) and a reference back to it (tag 29). Decoded into plain values it is 2^levels leaves.
 */
export function cborAliasBomb(levels: number): Uint8Array {
  const out: number[] = [0x61, 0x61]
  const level = (index: number): void => {
    if (index === levels) {
      out.push(0x61, 0x78) // the leaf: "x"
      return
    }
    out.push(0xd8, 0x1c, 0x82) // tag 28 (shareable), an array of 2
    level(index + 1)
    // Shared values are numbered in order of appearance: the one just written is number index + 1.
    const id = index + 1
    if (id === levels) out.push(0x61, 0x78)
    else out.push(0xd8, 0x1d, ...(id < 24 ? [id] : [0x18, id])) // tag 29 (shared reference)
  }
  level(0)
  return Uint8Array.from(out)
}

/** The leaves a tree with shared branches stands for (counted once per branch, not walked 2^n times). */
export function expandedLeaves(value: unknown, seen = new Map<unknown, number>()): number {
  if (!Array.isArray(value)) return 1
  const known = seen.get(value)
  if (known !== undefined) return known
  const leaves = value.reduce((sum: number, item) => sum + expandedLeaves(item, seen), 0)
  seen.set(value, leaves)
  return leaves
}

/** JSON text of `bytes` characters that builds a value every 3 of them: `[[],[],...,[]]`. */
export function jsonWideBomb(bytes: number): string {
  const count = Math.floor((bytes - 2) / 3)
  return `[${'[],'.repeat(count)}[]]`
}

/**
 * An event log whose one argument is `uint256` nested in `levels` dynamic arrays, each level an
 * array of two offsets that both point at the next level: 2^levels numbers from 32 + 96 x levels
 * bytes. `paddingBytes` of zeros after it raise ethers' own bound (1,024 times the data's length).
 */
export function abiAliasBomb(
  levels: number,
  paddingBytes = 0,
): { abi: string; data: string; topics: string[]; leaves: number } {
  const abi = `Bomb(uint256${'[]'.repeat(levels)} values)`
  const word = (value: number) => zeroPadValue(toBeHex(value), 32)
  const words: string[] = [word(32)] // the offset of the argument, from the start of the data
  for (let index = 0; index < levels; index++) {
    words.push(word(2)) // two items
    // The innermost array holds two numbers; every other one two offsets (from its items' start) to
    // the next array, which starts right after them.
    if (index === levels - 1) words.push(word(7), word(7))
    else words.push(word(64), word(64))
  }
  const padding = new Uint8Array(paddingBytes)
  const fragment = EventFragment.from(`event ${abi}`)
  return {
    abi,
    data: hexlify(concat([...words, padding])),
    topics: [fragment.topicHash],
    leaves: 2 ** levels,
  }
}
