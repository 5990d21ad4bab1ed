import type { ParamType } from 'ethers'

/**
 * A small ABI encoder for the argument lists job specs use: a flat list of `uintN`, `intN`, `bool`,
 * `address`, `bytesN` (each one 32-byte word in the head) and `bytes` / `string` (an offset word in
 * the head; the length and the right-padded data in the tail).
 *
 * Why: ethers' `Interface.encodeFunctionData` builds coders, a Writer and Result objects on every
 * call and checksums every address (a keccak), which was about a tenth of the runner's CPU per
 * request for two small ABIs. For these shapes the encoding is only hex words put side by side.
 * Anything else (arrays, tuples) stays with ethers: `wordKinds` answers undefined for it.
 *
 * The values are what ethabiencode's `convert()` makes of them, already checked: bigints in range
 * for their type, booleans, 0x-hex strings (an address of 20 bytes, `bytesN` of exactly N bytes).
 */
export type WordKind = 'number' | 'bool' | 'address' | 'fixedBytes' | 'bytes' | 'string'

const WORD_CHARS = 64

/** Each argument's kind, or undefined when one of them is not a type this encoder knows. */
export function wordKinds(inputs: readonly ParamType[]): WordKind[] | undefined {
  const kinds: WordKind[] = []
  for (const input of inputs) {
    const kind = wordKind(input)
    if (kind === undefined) return undefined
    kinds.push(kind)
  }
  return kinds
}

function wordKind(input: ParamType): WordKind | undefined {
  if (input.isArray() || input.isTuple()) return undefined
  const type = input.type
  if (type === 'bool' || type === 'address' || type === 'bytes' || type === 'string') return type
  const bits = /^u?int(\d+)$/.exec(type)?.[1]
  if (bits !== undefined) return sizeIn(Number(bits), 8, 256) ? 'number' : undefined
  const size = /^bytes(\d+)$/.exec(type)?.[1]
  if (size !== undefined) return sizeIn(Number(size), 1, 32) ? 'fixedBytes' : undefined
  return undefined
}

/** ethers refuses other sizes when it parses the ABI; checked again so that this never guesses. */
function sizeIn(size: number, step: number, max: number): boolean {
  return size >= step && size <= max && size % step === 0
}

/**
 * `prefix` (`0x`, or the 0x selector) followed by the arguments' encoding, in lowercase hex; the same
 * bytes as ethers. Undefined when a string is not well-formed UTF-16 (a lone surrogate): ethers
 * refuses or encodes it its own way, so the caller leaves that call to ethers.
 */
export function encodeWords(
  kinds: readonly WordKind[],
  values: readonly unknown[],
  prefix: string,
): string | undefined {
  const headBytes = kinds.length * 32
  let head = prefix
  let tail = ''
  for (let index = 0; index < kinds.length; index++) {
    const value = values[index]
    switch (kinds[index]) {
      case 'number':
        head += numberWord(value as bigint)
        break
      case 'bool':
        head += sizeWord(value ? 1 : 0)
        break
      case 'address':
        head += addressWord(value as string)
        break
      case 'fixedBytes':
        head += rightPadded(hexDigits(value as string))
        break
      case 'bytes':
      case 'string': {
        const digits =
          kinds[index] === 'bytes' ? hexDigits(value as string) : utf8Digits(value as string)
        if (digits === undefined) return undefined
        head += sizeWord(headBytes + tail.length / 2)
        tail += dynamicTail(digits)
        break
      }
    }
  }
  return head + tail
}

/** An integer as a word: big-endian, negative numbers in two's complement over 256 bits. */
function numberWord(value: bigint): string {
  return BigInt.asUintN(256, value).toString(16).padStart(WORD_CHARS, '0')
}

/** A small non-negative number (an offset, a length, a bool) as a word. */
function sizeWord(value: number): string {
  return value.toString(16).padStart(WORD_CHARS, '0')
}

/** An address as a word: left-padded. No checksum: the word is the same for any letter case. */
function addressWord(address: string): string {
  return hexDigits(address).padStart(WORD_CHARS, '0')
}

/** A dynamic value's tail: its length in bytes, then its bytes right-padded to whole words. */
function dynamicTail(digits: string): string {
  return sizeWord(digits.length / 2) + rightPadded(digits)
}

/** Zeros after the data up to a whole number of words (none for empty data). */
function rightPadded(digits: string): string {
  const words = Math.ceil(digits.length / WORD_CHARS)
  return digits.padEnd(words * WORD_CHARS, '0')
}

function hexDigits(hex: string): string {
  return hex.slice(2).toLowerCase()
}

/** UTF-8 bytes as hex digits, or undefined for a lone surrogate (see encodeWords). */
function utf8Digits(text: string): string | undefined {
  if (!isWellFormed(text)) return undefined
  return Buffer.from(text, 'utf8').toString('hex')
}

/** String.prototype.isWellFormed (ES2024; the tsconfig's lib is ES2023). */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed()
}
