import { randomUUID } from 'node:crypto'
import { inject } from 'vitest'
import { createRedisConnection } from '../../src/queue/connection.ts'

/** The shared test Redis. */
export function testRedisUrl(): string {
  return inject('redisUrl')
}

/** A queue prefix no other test (or concurrent test run) uses, so nothing needs flushing. */
export function uniquePrefix(label: string): string {
  return `test:${label}:${randomUUID().slice(0, 8)}`
}

/** Every key under the prefix and its whole value, whatever the type (BullMQ job data and return values included). */
export async function dumpKeyspace(redisUrl: string, prefix: string): Promise<string> {
  const redis = createRedisConnection(redisUrl, 'worker')
  const parts: string[] = []
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      cursor = next
      for (const key of keys) {
        parts.push(key)
        const type = await redis.type(key)
        if (type === 'string') parts.push((await redis.get(key)) ?? '')
        else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)))
        else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(key, 0, -1)))
        else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(key)))
        else if (type === 'zset')
          parts.push(JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES')))
        else if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')))
      }
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
  return parts.join('\n')
}
