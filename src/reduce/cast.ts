import { getAddress } from 'ethers/address'
import { hexlify, isHexString, toUtf8Bytes, zeroPadBytes } from 'ethers/utils'
import { Decimal, parseTimes, toBigInt, toDecimal, type Truncation } from './decimal.ts'
import { quoted, ReduceError } from './errors.ts'

/**
 * Typed casting, as API3 Airnode's `_type`/`_times` (NOTES.md):
 * - `uint256`/`int256`: numbers, decimal strings, bigints; `true` is 1, `false` 0. null, NaN, "", objects
 *   and arrays are errors. The value is multiplied by `times` exactly, then made an integer: floored
 *   by default (Airnode), or truncated toward zero with `truncation: 'trunc'` (Chainlink's ethabiencode).
 *   Out of range (negative for uint256, beyond 2^256 / ±2^255) is an error. Result: bigint.
 * - `bool`: false only for 0, '0', false, 'false', null (and undefined); everything else true.
 * - `bytes32`: a string is UTF-8 encoded and right-padded with zeros; more than 32 bytes is an error.
 *   A string that is already 0x + 64 hex digits is taken as the 32 bytes themselves. Result: 0x-hex.
 * - `string`: strings as they are; numbers, bigints and booleans in their decimal/text form; objects
 *   and arrays as JSON; null is an error.
 * - `address`: a 20-byte 0x-hex string; the result is checksummed (EIP-55).
 * - `bytes`: a 0x-hex string (even length) as those bytes, any other string as its UTF-8 bytes. Result: 0x-hex.
 * `times` applies only to the integer types; with another type it is an error (it would be ignored).
 */
export const VALUE_TYPES = [
  'uint256',
  'int256',
  'bool',
  'bytes32',
  'string',
  'address',
  'bytes',
] as const
export type ValueType = (typeof VALUE_TYPES)[number]

export interface CastOptions {
  times?: unknown
  /** How a non-integer becomes an integer; default 'floor' (Airnode). */
  truncation?: Truncation
}

export type CastResult<T extends ValueType> = T extends 'uint256' | 'int256'
  ? bigint
  : T extends 'bool'
    ? boolean
    : string

const UINT256_MAX = (1n << 256n) - 1n
const INT256_MAX = (1n << 255n) - 1n
const INT256_MIN = -(1n << 255n)

export function isValueType(type: string): type is ValueType {
  return (VALUE_TYPES as readonly string[]).includes(type)
}

export function castValue<T extends ValueType>(
  value: unknown,
  type: T,
  options?: CastOptions,
): CastResult<T>
export function castValue(
  value: unknown,
  type: string,
  options?: CastOptions,
): bigint | boolean | string
export function castValue(
  value: unknown,
  type: string,
  options: CastOptions = {},
): bigint | boolean | string {
  if (!isValueType(type))
    throw new ReduceError(
      'BAD_TYPE',
      `unknown type ${quoted(type)} (expected one of ${VALUE_TYPES.join(', ')})`,
    )
  if (options.times !== undefined && type !== 'uint256' && type !== 'int256') {
    throw new ReduceError('BAD_TIMES', `times applies to uint256 and int256 only, not to ${type}`)
  }
  switch (type) {
    case 'uint256':
    case 'int256':
      return castInteger(value, type, options)
    case 'bool':
      return castBool(value)
    case 'bytes32':
      return castBytes32(value)
    case 'string':
      return castString(value)
    case 'address':
      return castAddress(value)
    case 'bytes':
      return castBytes(value)
  }
}

function castInteger(value: unknown, type: 'uint256' | 'int256', options: CastOptions): bigint {
  const decimal = typeof value === 'boolean' ? new Decimal(value ? 1 : 0) : toDecimal(value)
  if (decimal === undefined)
    throw new ReduceError('CAST', `cannot cast ${describe(value)} to ${type}`)
  const scaled = options.times === undefined ? decimal : decimal.times(parseTimes(options.times))
  const integer = toBigInt(scaled, options.truncation ?? 'floor')
  const [min, max] = type === 'uint256' ? [0n, UINT256_MAX] : [INT256_MIN, INT256_MAX]
  if (integer < min || integer > max) {
    const why = type === 'uint256' && integer < 0n ? 'is negative' : 'is out of range'
    throw new ReduceError('CAST', `${integer} ${why} for ${type}`)
  }
  return integer
}

const FALSE_VALUES: readonly unknown[] = [0, '0', false, 'false', null, undefined]

function castBool(value: unknown): boolean {
  if (typeof value === 'bigint') return value !== 0n
  return !FALSE_VALUES.includes(value)
}

function castBytes32(value: unknown): string {
  if (typeof value === 'string' && /^0x[0-9a-fA-F]{64}$/.test(value)) return value.toLowerCase()
  const text = scalarText(value, 'bytes32')
  const bytes = toUtf8Bytes(text)
  if (bytes.length > 32)
    throw new ReduceError(
      'CAST',
      `${quoted(text)} is ${bytes.length} bytes, more than bytes32 holds`,
    )
  return zeroPadBytes(bytes, 32)
}

function castString(value: unknown): string {
  if (value === null || value === undefined)
    throw new ReduceError('CAST', `cannot cast ${describe(value)} to string`)
  if (typeof value === 'object')
    return JSON.stringify(value, (_key, item: unknown) =>
      typeof item === 'bigint' ? item.toString() : item,
    )
  return String(value)
}

function castAddress(value: unknown): string {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(value))
    throw new ReduceError('CAST', `cannot cast ${describe(value)} to address`)
  try {
    return getAddress(value)
  } catch {
    // A mixed-case address whose checksum is wrong: a typo, not an address.
    throw new ReduceError('CAST', `${value} has a wrong EIP-55 checksum`)
  }
}

function castBytes(value: unknown): string {
  if (typeof value === 'string' && isHexString(value)) {
    if (value.length % 2 !== 0)
      throw new ReduceError('CAST', `${value} has an odd number of hex digits`)
    return value.toLowerCase()
  }
  if (value instanceof Uint8Array) return hexlify(value)
  return hexlify(toUtf8Bytes(scalarText(value, 'bytes')))
}

function scalarText(value: unknown, type: string): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value)
  throw new ReduceError('CAST', `cannot cast ${describe(value)} to ${type}`)
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'no value'
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value)
  if (typeof value === 'string')
    return value === ''
      ? 'an empty string'
      : JSON.stringify(value.length > 60 ? value.slice(0, 60) + '...' : value)
  if (Array.isArray(value)) return 'an array'
  return `a ${typeof value}`
}
