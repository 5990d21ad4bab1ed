import { errorFromLinks, serialiseError, type SerialisedError } from '../../config/errors.ts'
import { Decimal } from '../../reduce/index.ts'
import { isDecimal } from '../values.ts'

/**
 * Pipeline values across a thread boundary. The structured clone a MessagePort uses keeps bigint,
 * Uint8Array, Map, arrays and plain objects, and drops the prototypes of Decimal and of errors: those
 * travel as tagged objects and come back as what they were.
 */
export type Encoded = unknown

const DECIMAL = '$decimal'
const ERROR = '$error'

export function encodeValue(value: unknown): Encoded {
  if (isDecimal(value)) return { [DECIMAL]: value.toFixed() }
  if (value instanceof Error) return { [ERROR]: serialiseError(value) }
  if (Array.isArray(value)) return value.map(encodeValue)
  if (value instanceof Map)
    return new Map([...value].map(([key, item]) => [key, encodeValue(item)] as const))
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, encodeValue(item)]))
  return value
}

export function decodeValue(value: Encoded): unknown {
  if (Array.isArray(value)) return value.map(decodeValue)
  if (value instanceof Map)
    return new Map([...value].map(([key, item]) => [key, decodeValue(item)] as const))
  if (isObject(value)) {
    const keys = Object.keys(value)
    if (keys.length === 1 && keys[0] === DECIMAL) return new Decimal(String(value[DECIMAL]))
    if (keys.length === 1 && keys[0] === ERROR)
      return errorFromLinks(value[ERROR] as SerialisedError)
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, decodeValue(item)]))
  }
  return value
}

function isObject(value: unknown): value is Record<string, unknown> {
  return (
    value !== null &&
    typeof value === 'object' &&
    !(value instanceof Uint8Array) &&
    Object.getPrototypeOf(value) === Object.prototype
  )
}
