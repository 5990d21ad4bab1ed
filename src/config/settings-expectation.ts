import { z } from 'zod'
import type { SettingInfo } from './settings-kit.ts'

/**
 * What a setting expects, in words, read from its schema: `a whole number of requests, 1 or more`,
 * `a port number from 0 to 65535`, `one of json, pretty`. zod's own words for a refused value are its
 * internals (`RUNNER_CONCURRENCY=abc` read "Invalid input: expected number, received NaN"); a
 * setting's own message (a URL, an address, a key) says it better and is kept. Undefined for a schema
 * whose refusals carry their own message.
 */
export function settingExpectation(schema: z.ZodType, info: SettingInfo): string | undefined {
  const inner = unwrapped(schema)
  if (inner instanceof z.ZodEnum) return `one of ${inner.options.join(', ')}`
  if (inner instanceof z.ZodNumber) return numberExpectation(inner, info.unit)
  return undefined
}

function unwrapped(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional)
    return unwrapped(schema.unwrap() as z.ZodType)
  return schema
}

function numberExpectation(schema: z.ZodNumber, unit: string | undefined): string {
  const whole = schema.isInt
  const step = whole ? 1 : 0
  // Whether a bound is itself allowed is asked of the schema (`positive()` excludes its 0).
  const bound = (value: number | null, inward: number): number | undefined => {
    if (value === null || !Number.isFinite(value) || Math.abs(value) >= Number.MAX_SAFE_INTEGER)
      return undefined
    return schema.safeParse(value).success ? value : value + inward
  }
  const lower = bound(schema.minValue, step)
  const upper = bound(schema.maxValue, -step)
  const noun =
    unit === 'port'
      ? 'a port number'
      : unit === 'block'
        ? 'a block number'
        : `a ${whole ? 'whole ' : ''}number${unit && unit !== 'URL' ? ` of ${unit}` : ''}`
  if (lower !== undefined && upper !== undefined) return `${noun} from ${lower} to ${upper}`
  if (lower !== undefined) return `${noun}, ${lower} or more`
  if (upper !== undefined) return `${noun}, ${upper} or less`
  return noun
}
