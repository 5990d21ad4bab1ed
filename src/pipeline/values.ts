import { randomBytes } from 'node:crypto'
import { hexlify } from 'ethers/utils'
import { Decimal } from '../reduce/index.ts'

/**
 * Pipeline values keep their types between tasks, like Chainlink's Go values: bigint for integers
 * (uint256 and friends), Decimal for exact decimals (multiply, divide, mean), Uint8Array for bytes,
 * strings for addresses and hex, plus JSON's own types.
 */

/**
 * A Decimal, by its class: decimal.js's own `Decimal.isDecimal` also takes any object whose
 * `toStringTag` is "[object Decimal]", which a JSON answer can carry. Every decimal.js clone shares
 * one prototype, so `instanceof` holds for all of ours.
 */
export function isDecimal(value: unknown): value is Decimal {
  return value instanceof Decimal
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    !(value instanceof Uint8Array) &&
    !isDecimal(value)
  )
}

/** A JSON-compatible view for printing and for request bodies: bigint and Decimal as numbers in text, bytes as 0x-hex. */
export function toPlain(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (isDecimal(value)) return value.toFixed()
  if (value instanceof Uint8Array) return hexlify(value)
  if (Array.isArray(value)) return value.map(toPlain)
  if (isPlainObject(value))
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, toPlain(item)]))
  return value
}

/**
 * toPlain, cut to `maxChars` characters of JSON text (TASK_OUTPUT_MAX_CHARS) for run records, logs
 * and printed output: a source picks the size of what it answers. A cut value becomes a string that
 * says how long it was.
 */
export function boundedPlain(value: unknown, maxChars: number): unknown {
  const plain = toPlain(value)
  const text = typeof plain === 'string' ? plain : (JSON.stringify(plain) ?? '')
  if (text.length <= maxChars) return plain
  return `${text.slice(0, maxChars)}... (${text.length} characters, cut at TASK_OUTPUT_MAX_CHARS=${maxChars})`
}

// A per-process random marker, so no string value can pass itself off as a number.
const BIG_NUMBER_MARK = `\u0000bignum-${randomBytes(8).toString('hex')}:`
const BIG_NUMBER_PATTERN = new RegExp(
  `"\\\\u0000${BIG_NUMBER_MARK.slice(1).replace(/[-:]/g, '\\$&')}(-?[0-9.]+)"`,
  'g',
)

/**
 * JSON text of a value in which bigints are written as JSON numbers, digit for digit (JSON.stringify
 * refuses bigint, and a JS number would lose precision). Decimals are written as strings ("1.5"), as
 * Chainlink's shopspring decimals marshal; bytes as 0x-hex strings.
 */
export function toJsonText(value: unknown): string {
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item === 'bigint') return BIG_NUMBER_MARK + item.toString()
    if (item instanceof Uint8Array) return hexlify(item)
    return item
  })
  return text.replace(BIG_NUMBER_PATTERN, '$1')
}

/** Short human text of a value, for task output lines. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined) return '(none)'
  return toJsonText(value)
}
