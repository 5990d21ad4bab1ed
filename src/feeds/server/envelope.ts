import type { CatalogEntry } from '../catalog/index.ts'
import type { Answer } from './answer.ts'

export type Provider = { name: string; subscription?: boolean; institutionGrade?: boolean }

/** The provider block: sports and NFT feeds also say whether they are subscription and institution grade. */
export function providerOf(entry: CatalogEntry): Provider {
  return entry.providerFlags
    ? { name: 'feedrunner-local', subscription: false, institutionGrade: false }
    : { name: 'feedrunner-local' }
}

function times(now: number): { time: string; timestamp: number } {
  return { time: new Date(now).toUTCString(), timestamp: now }
}

/** The success envelope of FEEDS.md, fields in its order. */
export function successEnvelope(
  entry: CatalogEntry,
  query: Record<string, string>,
  answer: Answer,
  now: number,
): Record<string, unknown> {
  return {
    status: 200,
    result: 'success',
    description: answer.description,
    query,
    provider: providerOf(entry),
    data: answer.data,
    ...times(now),
    ...(entry.hasLastUpdated && answer.lastUpdated !== undefined
      ? { lastUpdated: answer.lastUpdated }
      : {}),
  }
}

/** The error envelope: same shape with `result: 'error'` and no data; `status` equals the HTTP status. */
export function errorEnvelope(
  status: number,
  description: string,
  query: Record<string, string> | undefined,
  entry: CatalogEntry | undefined,
  now: number,
): Record<string, unknown> {
  return {
    status,
    result: 'error',
    description,
    ...(query ? { query } : {}),
    ...(entry ? { provider: providerOf(entry) } : {}),
    ...times(now),
  }
}
