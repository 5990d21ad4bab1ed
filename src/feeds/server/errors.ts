import { FeedrunnerError, type ErrorKind } from '../../config/errors.ts'

/**
 * An answer the local Data Feed Query Service gives instead of data. The server turns it into the
 * error envelope (`status`, `result: 'error'`, `description`) with the same HTTP status.
 */
export class FeedServiceError extends FeedrunnerError {
  override readonly name = 'FeedServiceError'
  constructor(
    readonly status: 400 | 401 | 404 | 500 | 502 | 503,
    /** Names the offending parameter or what was not found; goes to the client as `description`. */
    readonly description: string,
  ) {
    super(description, { kind: STATUS_KINDS[status], retryable: status >= 500 })
  }
}

/** What each answer of the service means, by its status. */
const STATUS_KINDS: Record<FeedServiceError['status'], ErrorKind> = {
  400: 'bad_input',
  401: 'not_authorised',
  404: 'bad_input',
  500: 'internal',
  502: 'upstream',
  503: 'unavailable',
}
