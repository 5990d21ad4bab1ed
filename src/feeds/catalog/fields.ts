import { z } from 'zod'

// Field schemas for `data` payloads. FEEDS.md describes several fields as strings while the
// service's own samples carry numbers (or the reverse); where the two disagree both are accepted,
// so a drift is only reported when a value is neither.

/** A number, or a string holding a decimal number (`"18"`, `"0.5"`). */
export const numberLike = z.union([
  z.number(),
  z.string().regex(/^-?\d+(\.\d+)?$/, { message: 'expected a number or a numeric string' }),
])

/** An integer string in the smallest unit (wei, token units), or an integer number. */
export const integerString = z.union([
  z.string().regex(/^-?\d+$/, { message: 'expected an integer string' }),
  z.number().int(),
])

/** A boolean, or the strings 'true' / 'false'. */
export const booleanLike = z.union([z.boolean(), z.enum(['true', 'false'])])

/** A number that is null when unavailable. */
export const nullableNumber = z.number().nullable()
