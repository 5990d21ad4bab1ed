import type { CatalogEntry } from './types.ts'
import { FeedrunnerError } from '../../config/errors.ts'

/** The upstream's `data` does not have the shape the catalog expects; `field` names where. */
export class FeedDataError extends FeedrunnerError {
  override readonly name = 'FeedDataError'
  constructor(
    readonly endpoint: string,
    /** Dotted path inside `data`, e.g. `data.homeMoneyLine`. */
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${endpoint}: unexpected data from the feed service: ${field} ${problem}`, {
      kind: 'upstream',
    })
  }
}

/**
 * A copy of `data` that also carries each aliased field under its canonical name (the originals
 * stay), so paths written with either spelling find the value.
 */
export function normaliseData(
  entry: CatalogEntry,
  data: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...data }
  for (const [canonical, aliases] of Object.entries(entry.aliases)) {
    if (Object.hasOwn(copy, canonical)) continue
    const found = aliases.find((alias) => Object.hasOwn(copy, alias))
    if (found !== undefined) copy[canonical] = copy[found]
  }
  return copy
}

function describeReceived(value: unknown): string {
  if (value === undefined) return 'missing'
  if (value === null) return 'null'
  return Array.isArray(value) ? 'an array' : typeof value
}

/** Normalises aliases, then validates against the entry's schema; throws FeedDataError naming the field. */
export function parseFeedData(entry: CatalogEntry, data: unknown): Record<string, unknown> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new FeedDataError(entry.name, 'data', `must be an object (got ${describeReceived(data)})`)
  }
  const normalised = normaliseData(entry, data as Record<string, unknown>)
  const parsed = entry.data.safeParse(normalised)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  const path = ['data', ...(issue?.path ?? []).map(String)].join('.')
  let received: unknown = normalised
  for (const segment of issue?.path ?? [])
    received = (received as Record<PropertyKey, unknown> | undefined)?.[segment as PropertyKey]
  throw new FeedDataError(
    entry.name,
    path,
    `${issue?.message ?? 'is invalid'} (got ${describeReceived(received)})`,
  )
}
