import { FeedrunnerError, type ErrorKind } from '../config/errors.ts'

/** What went wrong with a call to the Data Feed Query Service. */
export type UpstreamErrorKind =
  /** No answer within the timeout. */
  | 'timeout'
  /** Connection refused/reset, DNS, TLS: no HTTP answer at all. */
  | 'network'
  /** The body is not JSON (e.g. truncated). */
  | 'invalid-json'
  /** JSON, but not the service's envelope. */
  | 'bad-envelope'
  /** An envelope (or HTTP status) that says the request failed. */
  | 'upstream-error'
  /** A success envelope whose `data` does not have the catalog's shape. */
  | 'data-drift'

/**
 * A failed upstream call. `description` carries the service's own words when it sent any;
 * nothing here ever contains the key.
 */
export class UpstreamError extends FeedrunnerError {
  override readonly name = 'UpstreamError'
  constructor(
    readonly endpoint: string,
    /** What went wrong in the call; `kind` is its meaning in the project's failure model. */
    readonly problem: UpstreamErrorKind,
    readonly description: string,
    readonly details: {
      /** HTTP status of the response, when there was one. */
      httpStatus?: number
      /** Worth retrying: timeouts, connection errors, 5xx, 429, truncated bodies. */
      retryable: boolean
      /** For data-drift: the dotted path of the field, e.g. `data.homeMoneyLine`. */
      field?: string
    },
  ) {
    super(`${endpoint}: ${description}`, {
      kind: upstreamKind(problem, details.httpStatus),
      retryable: details.retryable,
    })
  }

  get httpStatus(): number | undefined {
    return this.details.httpStatus
  }

  get field(): string | undefined {
    return this.details.field
  }
}

function upstreamKind(problem: UpstreamErrorKind, httpStatus: number | undefined): ErrorKind {
  if (problem === 'timeout') return 'timeout'
  if (problem === 'network') return 'unavailable'
  if (httpStatus === 401 || httpStatus === 403) return 'not_authorised'
  return 'upstream'
}

/** Retry policy by HTTP status: server trouble and rate limiting are transient, other 4xx are not. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408
}
