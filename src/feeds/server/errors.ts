/**
 * An answer the local Data Feed Query Service gives instead of data. The server turns it into the
 * error envelope (`status`, `result: 'error'`, `description`) with the same HTTP status.
 */
export class FeedServiceError extends Error {
  override readonly name = 'FeedServiceError'
  constructor(
    readonly status: 400 | 401 | 404 | 500 | 502 | 503,
    /** Names the offending parameter or what was not found; goes to the client as `description`. */
    readonly description: string,
  ) {
    super(description)
  }
}
