import type { ErrorKind } from '../config/errors.ts'

/**
 * Why a request ended the way it did, as a small fixed set of classes: a metric label must stay
 * bounded, so the free text of a run's reason (addresses, amounts, upstream words) never becomes one.
 * The run record keeps the full text.
 */
export const REASON_CLASSES = [
  'none',
  // refused
  'unknown_job',
  'requester_not_allowed',
  'payment_too_low',
  'requester_busy',
  'requester_rate_limited',
  'expired',
  'refused_other',
  // errored
  'fetch_failed',
  'timeout',
  'bad_request_data',
  'bad_value',
  'tx_reverted',
  'tx_failed',
  'pipeline',
  'quarantined',
  // cancelled
  'cancelled',
] as const
export type ReasonClass = (typeof REASON_CLASSES)[number]

/** The class of a refusal from the runner's admission (src/runner/admission.ts), by its code. */
export function refusalClass(refusal: { code: RefusalClass } | undefined): ReasonClass {
  return refusal?.code ?? 'refused_other'
}
export type RefusalClass =
  | 'unknown_job'
  | 'requester_not_allowed'
  | 'payment_too_low'
  | 'requester_busy'
  | 'requester_rate_limited'
  | 'expired'

/** Task types by what their failure means for an operator. */
const FETCH_TASKS = new Set(['bridge', 'http'])
const REQUEST_DECODING_TASKS = new Set(['ethabidecodelog', 'cborparse'])
const TX_TASKS = new Set(['ethtx'])

/**
 * What the executor reports per task (structural: this module depends on nothing above it). The
 * class reads the failure's kind and the task's type; the words in `error` are never read.
 */
export interface FailedTaskLike {
  type: string
  ok: boolean
  error?: string
  failure?: { kind: ErrorKind }
  skipped?: boolean
}

/** The class of an errored run, from its first task that failed (not merely skipped). */
export function errorClass(tasks: readonly FailedTaskLike[]): ReasonClass {
  const failed = tasks.find((task) => !task.ok && !task.skipped)
  if (!failed) return tasks.some((task) => task.skipped) ? 'timeout' : 'pipeline'
  const kind = failed.failure?.kind
  if (kind === 'timeout') return 'timeout'
  if (FETCH_TASKS.has(failed.type)) return 'fetch_failed'
  if (REQUEST_DECODING_TASKS.has(failed.type)) return 'bad_request_data'
  if (TX_TASKS.has(failed.type)) return kind === 'reverted' ? 'tx_reverted' : 'tx_failed'
  return 'bad_value'
}

/**
 * The `status` label of a fetch: the provider's HTTP status when it is one an operator acts on,
 * its class (`4xx`, `5xx`) otherwise, and the failure kind when the service gave no status.
 */
const NAMED_STATUSES = new Set([200, 400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504])
export type FetchFailureKind = 'upstream' | 'invalid-response' | 'internal'

export function fetchStatusLabel(
  providerStatus: number | undefined,
  kind?: FetchFailureKind,
): string {
  if (kind === 'invalid-response') return 'invalid_response'
  if (
    providerStatus !== undefined &&
    Number.isInteger(providerStatus) &&
    providerStatus >= 100 &&
    providerStatus <= 599
  ) {
    return NAMED_STATUSES.has(providerStatus)
      ? String(providerStatus)
      : `${Math.floor(providerStatus / 100)}xx`
  }
  switch (kind) {
    case 'upstream':
      return 'no_answer'
    case undefined:
      return 'ok'
    default:
      return 'internal'
  }
}
