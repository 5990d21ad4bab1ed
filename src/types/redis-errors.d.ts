declare module 'redis-errors' {
  /** The errors ioredis makes itself (its dependency's classes; it has no types of its own). */
  const errors: {
    RedisError: new (message?: string) => Error
    /** A command ioredis gave up on: its connection closed under it, or its retries ran out. */
    AbortError: new (message?: string) => Error
  }
  export = errors
}
