import { z } from 'zod'
import type { CatalogEntry, ParamIssue } from './types.ts'
import { FeedrunnerError } from '../../config/errors.ts'

export type ValidatedParams = Record<string, string>

export type ParamsValidation =
  | { readonly ok: true; readonly params: ValidatedParams }
  | { readonly ok: false; readonly issues: readonly ParamIssue[]; readonly message: string }

/** Bad request parameters; the message names each parameter (the adapter and the server answer 400 with it). */
export class FeedParamsError extends FeedrunnerError {
  override readonly name = 'FeedParamsError'
  readonly status = 400
  constructor(
    readonly endpoint: string,
    readonly issues: readonly ParamIssue[],
  ) {
    super(formatIssues(issues), { kind: 'bad_input' })
  }
}

/** `parameter date must be ...; parameter homeTeam is required` */
export function formatIssues(issues: readonly ParamIssue[]): string {
  return issues.map((issue) => `parameter ${issue.param} ${issue.message}`).join('; ')
}

/** Shows a rejected value without flooding a message with it. */
function shown(value: string): string {
  const short = value.length > 64 ? `${value.slice(0, 64)}...` : value
  return ` (got ${JSON.stringify(short)})`
}

/** A raw value as a string: query values are strings; JSON callers may send numbers. */
function asString(value: unknown): string | undefined | { wrongType: string } {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'string') return value.trim() === '' ? undefined : value
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  if (typeof value === 'bigint') return value.toString()
  return { wrongType: Array.isArray(value) ? 'array' : typeof value }
}

/**
 * Checks every declared parameter of `entry` (unknown ones, `key` included, are left out of the
 * result) and the entry's cross-parameter rules. Returns the normalised values, defaults applied.
 */
export function validateParams(
  entry: CatalogEntry,
  raw: Readonly<Record<string, unknown>>,
): ParamsValidation {
  const issues: ParamIssue[] = []
  const params: ValidatedParams = {}
  for (const [name, spec] of Object.entries(entry.params)) {
    const value = asString(raw[name])
    if (value === undefined) {
      if (spec.default !== undefined) params[name] = spec.default
      else if (spec.required) issues.push({ param: name, message: 'is required' })
      continue
    }
    if (typeof value === 'object') {
      issues.push({ param: name, message: `must be a string (got ${value.wrongType})` })
      continue
    }
    const parsed = spec.schema.safeParse(value)
    if (parsed.success) params[name] = parsed.data
    else
      issues.push({
        param: name,
        message: `${parsed.error.issues[0]?.message ?? 'is invalid'}${shown(value)}`,
      })
  }
  if (issues.length === 0 && entry.refine) {
    // Defaults do not count as "given" for the variant rules.
    const given = Object.fromEntries(
      Object.entries(params).filter(([name]) => asString(raw[name]) !== undefined),
    )
    issues.push(...entry.refine(given))
  }
  if (issues.length > 0) return { ok: false, issues, message: formatIssues(issues) }
  return { ok: true, params }
}

/** Like validateParams, but throws FeedParamsError. */
export function parseParams(
  entry: CatalogEntry,
  raw: Readonly<Record<string, unknown>>,
): ValidatedParams {
  const result = validateParams(entry, raw)
  if (!result.ok) throw new FeedParamsError(entry.name, result.issues)
  return result.params
}

/**
 * The same rules as one zod schema over the whole query object (for callers that compose zod
 * schemas); each issue's path is the parameter's name.
 */
export function paramsSchema(
  entry: CatalogEntry,
): z.ZodType<ValidatedParams, Record<string, unknown>> {
  return z.record(z.string(), z.unknown()).transform((raw, context) => {
    const result = validateParams(entry, raw)
    if (result.ok) return result.params
    for (const issue of result.issues)
      context.addIssue({
        code: 'custom',
        path: [issue.param],
        message: `parameter ${issue.param} ${issue.message}`,
      })
    return z.NEVER
  })
}
