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
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError'
  constructor(
    readonly endpoint: string,
    readonly kind: UpstreamErrorKind,
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
    super(`${endpoint}: ${description}`)
  }

  get httpStatus(): number | undefined {
    return this.details.httpStatus
  }

  get retryable(): boolean {
    return this.details.retryable
  }

  get field(): string | undefined {
    return this.details.field
  }
}

/** Retry policy by HTTP status: server trouble and rate limiting are transient, other 4xx are not. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408
}
