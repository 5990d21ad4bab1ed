import { z } from 'zod'

/** The building blocks of the settings declarations (settings-declared.ts, settings-bounds.ts). */

/** Sections of the configuration table and of `.env.example`, in this order. */
export type SettingGroup =
  | 'logging'
  | 'redis'
  | 'chain'
  | 'feeds'
  | 'fetch'
  | 'adapter'
  | 'feed-service'
  | 'dev'
  | 'operations'
  | 'bounds'

export interface SettingInfo {
  group: SettingGroup
  description: string
  /** What the number or text measures: `ms`, `s`, `blocks`, `percent`, `URL`, ... */
  unit?: string
  /** A secret: never in a log line, an error message, a queue payload, a metric or a response. */
  sensitive?: boolean
  /** The default as the docs show it, when the schema holds one (set by `setting()`). */
  default?: string
  /** For a setting without a fixed default: what happens when it is not set. */
  whenUnset?: string
  /** A value `.env.example` shows (commented out) for a setting without a default. */
  example?: string
}

export interface Declared<T extends z.ZodType> {
  schema: T
  info: SettingInfo
}

/** A setting with a default: declared here and nowhere else. */
export function withDefault<T extends z.ZodType>(
  type: T,
  value: z.output<T> & NonNullable<unknown>,
  info: Omit<SettingInfo, 'default' | 'whenUnset'>,
): Declared<z.ZodDefault<T>> {
  const shown = Array.isArray(value) ? value.join(',') : String(value)
  return { schema: type.default(value as never), info: { ...info, default: shown } }
}

/** A setting without a default; `whenUnset` says what its absence means. */
export function optional<T extends z.ZodType>(
  type: T,
  info: Omit<SettingInfo, 'default'> & { whenUnset: string },
): Declared<z.ZodOptional<T>> {
  return { schema: type.optional(), info }
}

export const url = z.url({ message: 'expected a URL such as http://127.0.0.1:8080' })
export const positiveInt = z.coerce.number().int().positive()
export const boolean = z
  .enum(['true', 'false', '1', '0'], { message: 'expected true or false' })
  .transform((value) => value === 'true' || value === '1')
