import { randomUUID } from 'node:crypto'
import { inject } from 'vitest'
import type { Redis } from 'ioredis'

/** The shared test Redis. */
export function testRedisUrl(): string {
  return inject('redisUrl')
}

/** A queue prefix no other test (or concurrent test run) uses, so nothing needs flushing. */
export function uniquePrefix(label: string): string {
  return `test:${label}:${randomUUID().slice(0, 8)}`
}

/** A client connection fails fast until it is ready: resolves once it is. */
export async function untilReady(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve))
}
