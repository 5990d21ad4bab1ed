import { createHash } from 'node:crypto'
import { z } from 'zod'
import { serialiseError } from '../config/errors.ts'
import { reviveErrorText, serialisedErrorSchema } from '../config/stored-errors.ts'

/**
 * What travels through a fetch queue: the endpoint and its normalised parameters, never a key.
 * The fetch worker adds `key=##signKey` and the feeds client substitutes it at the last moment.
 */
export const fetchJobDataSchema = z.object({
  endpoint: z.string().min(1),
  params: z.record(z.string(), z.string()),
})
export type FetchJobData = z.infer<typeof fetchJobDataSchema>

/**
 * When a fetch finished, by Redis's clock (src/queue/redis-clock.ts), in epoch ms: how old an outcome
 * is decides whether another request shares it, and the process that compares is not the one that
 * finished it. Absent from jobs of a worker that could not read Redis's clock: their age is unknown.
 */
const finishedAtSchema = z.number().finite().optional()

/** A successful fetch: the feed envelope (aliases normalised), as the job's return value. */
export const fetchJobResultSchema = z.object({
  envelope: z.record(z.string(), z.unknown()),
  finishedAt: finishedAtSchema,
})
export type FetchJobResult = z.infer<typeof fetchJobResultSchema>

/**
 * The job id of a fetch: equal requests (same endpoint, same normalised parameters) get the same id,
 * so they join one job, in one process or across processes. Parameter order does not matter; values
 * keep their case (the feed service decides whether case matters). Never computed with a key.
 */
export function fetchJobId(data: FetchJobData): string {
  const canonical = JSON.stringify([
    data.endpoint,
    Object.entries(data.params).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  ])
  const hash = createHash('sha256').update(canonical).digest('hex').slice(0, 32)
  return `${data.endpoint}-${hash}`
}

/**
 * Why a fetch failed, as the worker saw it: a stored error (`{kind, message, retryable, causes}`, see
 * src/config/errors.ts) with what the adapter needs besides. It travels as the failed job's reason
 * (JSON), so an adapter in another process can answer with the right status and the upstream's words.
 * - kind `upstream`, `timeout`, `unavailable`, `not_authorised`, `bad_input`: the feed service
 *   answered with an error (`providerStatus`) or did not answer;
 * - `invalidResponse`: it answered, but not with a valid envelope or with data of the wrong shape;
 * - kind `internal` (or `config`): the worker could not run the fetch (a bug, a version mismatch, no key).
 */
export const fetchFailureSchema = serialisedErrorSchema.extend({
  providerStatus: z.number().int().optional(),
  invalidResponse: z.boolean().optional(),
  attempts: z.number().int().positive(),
  finishedAt: finishedAtSchema,
})
export type FetchFailure = z.infer<typeof fetchFailureSchema>

/** What a fetch function reports; the worker adds `attempts`, and `causes` default to none. */
export type FetchFailureInit = Omit<FetchFailure, 'attempts' | 'causes'> &
  Partial<Pick<FetchFailure, 'causes'>>

export function encodeFetchFailure(failure: FetchFailure): string {
  return JSON.stringify(failure)
}

/** The failure a failed job carries; a reason that is not ours (a stalled job, a crash) is revived as it says. */
export function decodeFetchFailure(reason: string): FetchFailure {
  try {
    const parsed = fetchFailureSchema.safeParse(JSON.parse(reason))
    if (parsed.success) return parsed.data
  } catch {
    // not JSON: fall through
  }
  return { ...serialiseError(reviveErrorText(reason)), attempts: 1 }
}
