import { hexlify, toUtf8Bytes } from 'ethers/utils'
import { Decimal, toDecimal } from '../../reduce/index.ts'
import { TaskError } from '../task.ts'
import { isDecimal } from '../values.ts'

/** Conversions shared by several task types; each error names the attribute. */

export function decimalOf(value: unknown, name: string): Decimal {
  if (isDecimal(value)) return new Decimal(value)
  if (value instanceof Uint8Array) return decimalOf(new TextDecoder().decode(value), name)
  const decimal = toDecimal(value)
  if (decimal === undefined) throw new TaskError(`${name}: not a number: ${describe(value)}`)
  return decimal
}

/** 0x and whole bytes; any other string is text. */
const EVEN_HEX = /^0x(?:[0-9a-fA-F]{2})*$/

export function bytesOf(value: unknown, name: string): Uint8Array {
  if (value instanceof Uint8Array) return value
  if (typeof value === 'string') {
    // Node's hex decoder: ethers' getBytes parses two characters at a time, a visible cost per request.
    if (EVEN_HEX.test(value)) return new Uint8Array(Buffer.from(value.slice(2), 'hex'))
    return toUtf8Bytes(value)
  }
  throw new TaskError(`${name}: expected bytes or a 0x-hex string, got ${describe(value)}`)
}

export function hexOf(value: unknown, name: string): string {
  if (typeof value === 'string' && EVEN_HEX.test(value)) return value.toLowerCase()
  return hexlify(bytesOf(value, name))
}

export function integerAttribute(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const number = Number(value)
  if (!Number.isSafeInteger(number) || number < 0)
    throw new TaskError(`${name} must be a non-negative integer, got ${describe(value)}`)
  return number
}

/** Chainlink's MaybeInt32Param: a whole number within int32 (sign allowed), or undefined when not given. */
export function int32Attribute(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined
  const text = typeof value === 'string' ? value.trim() : String(value)
  const number = Number(text)
  if (!/^[+-]?\d+$/.test(text) || Math.abs(number) > 2 ** 31 - 1)
    throw new TaskError(`${name} must be a whole number (int32), got ${describe(value)}`)
  return number
}

export function describe(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'nothing'
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? value.slice(0, 80) + '...' : value)
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean')
    return String(value)
  if (isDecimal(value)) return value.toFixed()
  if (value instanceof Uint8Array) return `${value.length} bytes`
  return Array.isArray(value) ? 'an array' : 'an object'
}

/** Chainlink's StringParam: text, or bytes read as text; anything else is bad input. */
export function stringParam(value: unknown, name: string): string {
  if (typeof value === 'string') return value
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8')
  throw new TaskError(`${name}: expected a string, got ${describe(value)}`)
}

/**
 * Chainlink's BytesParam: bytes as they are; a string that is 0x and whole hex bytes is decoded, any
 * other string is its UTF-8 bytes; null is no bytes.
 */
export function bytesParam(value: unknown, name: string): Uint8Array {
  if (value === null) return new Uint8Array(0)
  return bytesOf(value, name)
}
