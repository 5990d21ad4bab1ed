import { Decimal as DecimalJs } from 'decimal.js'
import { quoted, ReduceError } from './errors.ts'

/**
 * Exact decimals. Precision 1,000 significant digits and inputs limited to 200 characters make every
 * product of two inputs exact (at most 400 digits), so `times` never rounds; only the explicit
 * truncation at the end of a cast does.
 */
export const Decimal = DecimalJs.clone({
  precision: 1000,
  rounding: DecimalJs.ROUND_DOWN,
  toExpPos: 1000,
  toExpNeg: -1000,
})
export type Decimal = InstanceType<typeof Decimal>

const DECIMAL_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,4})?$/
const MAX_TEXT = 200

/** A decimal.js value from a number, bigint, decimal string or Decimal; undefined when not numeric. */
export function toDecimal(value: unknown): Decimal | undefined {
  if (value instanceof DecimalJs) return new Decimal(value)
  if (typeof value === 'bigint') return new Decimal(value.toString())
  if (typeof value === 'number')
    return Number.isFinite(value) ? new Decimal(String(value)) : undefined
  if (typeof value === 'string') {
    const text = value.trim()
    if (text.length > MAX_TEXT || !DECIMAL_TEXT.test(text)) return undefined
    return new Decimal(text)
  }
  return undefined
}

/** `times` as a Decimal; a ReduceError when it is not a finite decimal. */
export function parseTimes(times: unknown): Decimal {
  const decimal = toDecimal(times)
  if (decimal === undefined)
    throw new ReduceError('BAD_TIMES', `times must be a decimal number, got ${quoted(times)}`)
  return decimal
}

export type Truncation = 'floor' | 'trunc'

/** The integer part, by flooring (Airnode) or truncating toward zero (Chainlink's ethabiencode). */
export function toBigInt(decimal: Decimal, truncation: Truncation): bigint {
  const integer = truncation === 'floor' ? decimal.floor() : decimal.trunc()
  return BigInt(integer.toFixed(0))
}
