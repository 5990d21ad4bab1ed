import type { Cache, CacheEntry } from '@chainlink/external-adapter-framework/cache/index.js'
import { AdapterError } from '@chainlink/external-adapter-framework/validation/error.js'
import { isRedisUnavailable } from '../queue/connection.ts'

/**
 * The framework's cache behind a guard: when Redis is away, a read fails at once with a 503 that
 * says so (the framework would answer 500 with ioredis' words). There is deliberately no `lock`:
 * the framework locks a Redis cache for its single background writer, and this adapter has no
 * background work, so replicas must not exclude each other.
 */
export class FailFastCache<T> implements Cache<T> {
  constructor(private readonly inner: Cache<T>) {}

  get type(): Cache<T>['type'] {
    return this.inner.type
  }

  async get(key: string): Promise<Readonly<T> | undefined> {
    try {
      return await this.inner.get(key)
    } catch (error) {
      throw unavailable(error)
    }
  }

  async set(key: string, value: Readonly<T>, ttl: number): Promise<void> {
    try {
      await this.inner.set(key, value, ttl)
    } catch (error) {
      throw unavailable(error)
    }
  }

  async setMany(entries: CacheEntry<Readonly<T>>[], ttl: number): Promise<void> {
    try {
      await this.inner.setMany(entries, ttl)
    } catch (error) {
      throw unavailable(error)
    }
  }

  async delete(key: string): Promise<void> {
    await this.inner.delete(key)
  }

  async setTTL(key: string, ttl: number): Promise<void> {
    await this.inner.setTTL(key, ttl)
  }
}

function unavailable(error: unknown): unknown {
  if (!isRedisUnavailable(error)) return error
  return new AdapterError({
    statusCode: 503,
    name: 'RedisUnavailable',
    message: `Redis is unavailable, so the response cache could not be used (${(error as Error).message}); retry when Redis is back`,
  })
}
