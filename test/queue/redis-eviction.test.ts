import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { Connections } from '../../src/queue/connections.ts'
import { evictionOf, evicts, RedisEvictionWatch } from '../../src/queue/redis-eviction.ts'
import { untilReady } from '../support/redis.ts'

interface Line {
  level: 'warn' | 'info' | 'error'
  message: string
}

function capture(): { lines: Line[]; log: Record<Line['level'], (f: object, m: string) => void> } {
  const lines: Line[] = []
  const at = (level: Line['level']) => (_fields: object, message: string) =>
    void lines.push({ level, message })
  return { lines, log: { warn: at('warn'), info: at('info'), error: at('error') } }
}

describe('evictionOf and evicts', () => {
  it('reads the policy and the limit of INFO memory, and evicts only with both', () => {
    const info =
      '# Memory\r\nused_memory:1\r\nmaxmemory:67108864\r\nmaxmemory_human:64.00M\r\nmaxmemory_policy:allkeys-lru\r\n'
    expect(evictionOf(info)).toEqual({
      maxmemory: 67108864,
      limit: '64.00M',
      policy: 'allkeys-lru',
    })
    expect(evicts({ maxmemory: 67108864, limit: '64.00M', policy: 'allkeys-lru' })).toBe(true)
    expect(evicts({ maxmemory: 67108864, limit: '64.00M', policy: 'noeviction' })).toBe(false)
    // No limit: Redis never reaches it, whatever the policy says.
    expect(evicts({ maxmemory: 0, limit: '0B', policy: 'volatile-lru' })).toBe(false)
    expect(evictionOf('# Memory\r\nused_memory:1\r\n')).toBeUndefined()
  })
})

/**
 * A Redis that may evict feedrunner's keys is said once by each process, naming REDIS_URL's host and
 * port and the remedy, and once when it no longer may: a state, not a line per connection.
 */
describe('a process on a Redis that evicts', () => {
  let redis: PrivateRedis | undefined
  beforeAll(async () => {
    redis = await startPrivateRedis({
      extraArgs: ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'],
    })
  }, 60_000)
  afterAll(async () => {
    await redis?.stop()
  })

  it('is said once when the first connection opens, once when fixed, once when evicting again', async () => {
    const { lines, log } = capture()
    const connections = new Connections(
      { REDIS_URL: redis!.url, OUTAGE_REPORT_INTERVAL_MS: 60_000 },
      log,
    )
    const admin = createRedisConnection(redis!.url, 'client')
    try {
      for (const name of ['one', 'two', 'three']) connections.redis('worker', name)
      // The cuts below may add the connections' own outage lines: only the watch's are counted.
      const said = (level: Line['level']) =>
        lines.filter((line) => line.level === level && / evicts keys /.test(line.message))
      await waitFor('the eviction warning', async () => said('warn').length > 0, 30_000)
      expect(said('warn')).toHaveLength(1)
      expect(said('warn')[0]!.message).toBe(
        `Redis at REDIS_URL 127.0.0.1:${redis!.port} evicts keys when its memory is full ` +
          `(maxmemory 64.00M, maxmemory-policy allkeys-lru): an evicted queued request or run ` +
          `record is forgotten until a runner's next start reads the chain again, and an evicted ` +
          `part of a queue job breaks it; set maxmemory-policy noeviction (redis.conf, or CONFIG SET ` +
          `maxmemory-policy noeviction) and give Redis the memory feedrunner keeps (docs/operating.md)`,
      )

      // Fixed live, then every connection cut: the watch reads the policy again when it reconnects.
      await untilReady(admin)
      await admin.config('SET', 'maxmemory-policy', 'noeviction')
      await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
      await waitFor(
        'the line that it no longer evicts',
        async () => said('info').length > 0,
        30_000,
      )
      expect(said('info').map((line) => line.message)).toEqual([
        `Redis at REDIS_URL 127.0.0.1:${redis!.port} no longer evicts keys (maxmemory-policy noeviction)`,
      ])

      await admin.config('SET', 'maxmemory-policy', 'volatile-ttl')
      await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
      await waitFor('the second warning', async () => said('warn').length > 1, 30_000)
      expect(said('warn')[1]!.message).toContain('maxmemory-policy volatile-ttl')
      expect(said('warn')).toHaveLength(2)
      expect(said('info')).toHaveLength(1)
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru')
      admin.disconnect()
      await connections.close()
    }
  }, 120_000)

  it('says nothing of a Redis without a limit, or of a cache that may evict', async () => {
    const { lines, log } = capture()
    const admin = createRedisConnection(redis!.url, 'client')
    await untilReady(admin)
    try {
      await admin.config('SET', 'maxmemory', '0')
      const watch = new RedisEvictionWatch(admin, { redisUrl: redis!.url, log })
      await watch.check()
      expect(lines).toEqual([])
      await admin.config('SET', 'maxmemory', '64mb')
      await watch.check()
      expect(lines.map((line) => line.level)).toEqual(['warn'])

      // The adapter's response cache on a Redis of its own (CACHE_REDIS_URL) is not watched: its
      // connections (the cache's, and the one for the write probe) come up and nothing is said.
      const cache = new Connections(
        { REDIS_URL: redis!.url, OUTAGE_REPORT_INTERVAL_MS: 60_000 },
        log,
        { watchEviction: false },
      )
      const clients = async () =>
        Number((await admin.info('clients')).match(/connected_clients:(\d+)/)![1])
      const before = await clients()
      await untilReady(cache.redis('client', 'adapter cache'))
      await waitFor('both connections', async () => (await clients()) - before === 2, 30_000)
      expect(lines.map((line) => line.level)).toEqual(['warn'])
      await cache.close()
    } finally {
      admin.disconnect()
    }
  }, 60_000)
})
