import { z } from 'zod'
import type { ParamSpec } from './types.ts'

// Builders for the kinds of query parameter the service takes. Each returns plain data plus a
// zod schema that validates one string value and returns it normalised.

interface Base {
  name: string
  description: string
  example: string
  required?: boolean
  default?: string
}

function spec(
  base: Base,
  schema: z.ZodType<string, string>,
  options?: readonly string[],
): ParamSpec {
  return {
    name: base.name,
    description: base.description,
    example: base.example,
    required: base.required ?? true,
    ...(options ? { options } : {}),
    ...(base.default !== undefined ? { default: base.default } : {}),
    schema: schema.describe(base.description),
  }
}

const nonEmpty = z.string().trim().min(1, { message: 'must not be empty' })

/** Free text such as a team, player or town name. */
export function textParam(base: Base & { maxLength?: number }): ParamSpec {
  const max = base.maxLength ?? 100
  return spec(base, nonEmpty.max(max, { message: `must be at most ${max} characters` }))
}

/** One of a fixed list, matched case-insensitively and returned in the listed spelling. */
export function enumParam(base: Base, options: readonly string[]): ParamSpec {
  const byLower = new Map(options.map((option) => [option.toLowerCase(), option]))
  const schema = nonEmpty.transform((value, context) => {
    // '+' is how the service's own examples write a space in a query ('american+football').
    const found = byLower.get(value.replace(/\+/g, ' ').toLowerCase())
    if (found !== undefined) return found
    context.addIssue({ code: 'custom', message: `must be one of: ${options.join(', ')}` })
    return z.NEVER
  })
  return spec(base, schema, options)
}

/** A code of letters and digits (league codes). */
export function codeParam(base: Base): ParamSpec {
  return spec(
    base,
    nonEmpty
      .regex(/^[A-Za-z0-9]{2,12}$/, {
        message: 'must be a code of 2 to 12 letters or digits, e.g. epl',
      })
      .transform((value) => value.toLowerCase()),
  )
}

/** True when the numbers form a date that exists in the calendar (no 2024-02-30). */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day))
  return (
    date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
  )
}

/** YYYY-MM-DD and a real calendar date. */
export function dateParam(base: Base): ParamSpec {
  const schema = nonEmpty
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'must be a date in the form YYYY-MM-DD' })
    .refine(
      (value) =>
        isCalendarDate(
          Number(value.slice(0, 4)),
          Number(value.slice(5, 7)),
          Number(value.slice(8, 10)),
        ),
      {
        message: 'must be a real calendar date',
      },
    )
  return spec(base, schema)
}

/** YYYY-MM-DDTHH:mm:ss, a real date and a real time of day. */
export function dateTimeParam(base: Base): ParamSpec {
  const schema = nonEmpty
    .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/, {
      message: 'must be a date and time in the form YYYY-MM-DDTHH:mm:ss',
    })
    .refine(
      (value) =>
        isCalendarDate(
          Number(value.slice(0, 4)),
          Number(value.slice(5, 7)),
          Number(value.slice(8, 10)),
        ) &&
        Number(value.slice(11, 13)) < 24 &&
        Number(value.slice(14, 16)) < 60 &&
        Number(value.slice(17, 19)) < 60,
      { message: 'must be a real calendar date and time of day' },
    )
  return spec(base, schema)
}

/** A decimal number within [min, max], e.g. a latitude; returned as given (trimmed). */
export function decimalParam(base: Base, min: number, max: number): ParamSpec {
  const schema = nonEmpty
    .regex(/^[+-]?(\d+(\.\d+)?|\.\d+)$/, { message: 'must be a decimal number' })
    .refine((value) => Number(value) >= min && Number(value) <= max, {
      message: `must be between ${min} and ${max}`,
    })
  return spec(base, schema)
}

/** A 0x-prefixed 20-byte address, returned lowercase. */
export function addressParam(base: Base): ParamSpec {
  return spec(
    base,
    nonEmpty
      .regex(/^0x[0-9a-fA-F]{40}$/, { message: 'must be a 0x-prefixed address of 40 hex digits' })
      .transform((value) => value.toLowerCase()),
  )
}

/** A 0x-prefixed 32-byte transaction hash, returned lowercase. */
export function hashParam(base: Base): ParamSpec {
  return spec(
    base,
    nonEmpty
      .regex(/^0x[0-9a-fA-F]{64}$/, {
        message: 'must be a 0x-prefixed transaction hash of 64 hex digits',
      })
      .transform((value) => value.toLowerCase()),
  )
}

/** A chain identifier such as `ethereum-mainnet` or `local`. */
export function chainIdParam(base: Base): ParamSpec {
  return spec(
    base,
    nonEmpty
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, {
        message: 'must be a chain identifier of letters, digits, - and _, e.g. ethereum-mainnet',
      })
      .transform((value) => value.toLowerCase()),
  )
}

/** A token id: a non-negative integer that fits in uint256. */
export function tokenIdParam(base: Base): ParamSpec {
  return spec(
    base,
    nonEmpty
      .regex(/^\d{1,78}$/, { message: 'must be a non-negative integer token id' })
      .refine((value) => !/^\d+$/.test(value) || BigInt(value) < 2n ** 256n, {
        message: 'must fit in uint256',
      })
      .transform((value) => BigInt(value).toString()),
  )
}
