import { randomUUID } from 'node:crypto'
import { inject } from 'vitest'

/** The shared test Redis. */
export function testRedisUrl(): string {
  return inject('redisUrl')
}

/** A queue prefix no other test (or concurrent test run) uses, so nothing needs flushing. */
export function uniquePrefix(label: string): string {
  return `test:${label}:${randomUUID().slice(0, 8)}`
}
