import { afterAll, describe, expect, it } from 'vitest'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { RedisClock } from '../../src/queue/redis-clock.ts'
import { startPrivateRedis } from '../../src/dev/redis.ts'
import { testRedisUrl, uniquePrefix, untilReady } from '../support/redis.ts'

const slotKey = `${uniquePrefix('clock')}:clock`

/** Redis's TIME in ms, read apart from the clock under test. */
async function redisTime(redis: ReturnType<typeof createRedisConnection>): Promise<number> {
  const [seconds, micros] = await redis.time()
  return Number(seconds) * 1_000 + Number(micros) / 1_000
}

describe('RedisClock', () => {
  const redis = createRedisConnection(testRedisUrl(), 'client')
  afterAll(() => redis.disconnect())

  it('knows no time before Redis answered, then Redis’s time whatever the host wall clock says', async () => {
    // A host whose wall clock is 300 s ahead.
    const clock = new RedisClock(redis, { slotKey, wall: () => Date.now() + 300_000 })
    expect(clock.now()).toBeUndefined()
    expect(clock.hostOffsetMs()).toBeUndefined()
    await untilReady(redis)
    const before = await redisTime(redis)
    expect(await clock.sync()).toBe(true)
    const read = clock.now()!
    const after = await redisTime(redis)
    // The clock puts Redis's answer at the middle of its round trip, so it may be off by half of
    // one: on a loaded machine more than a millisecond. Its trip lies between the two readings.
    const halfTrip = (after - before) / 2
    expect(read).toBeGreaterThanOrEqual(before - halfTrip - 1)
    expect(read).toBeLessThanOrEqual(after + halfTrip + 1)
    // Off by the 300 s, give or take the round trips of a loaded machine.
    expect(Math.abs(clock.hostOffsetMs()! - 300_000)).toBeLessThan(5_000)
  })

  it('runs on the monotonic clock between readings, so a wall clock that steps does not move it', async () => {
    let monotonic = 1_000
    let wall = Date.now()
    const clock = new RedisClock(redis, { slotKey, monotonic: () => monotonic, wall: () => wall })
    await untilReady(redis)
    expect(await clock.sync()).toBe(true)
    const read = clock.now()!
    wall -= 3_600_000
    monotonic += 2_500
    expect(clock.now()).toBe(read + 2_500)
  })

  it('keeps its last reading while Redis does not answer', async () => {
    const own = await startPrivateRedis()
    const connection = createRedisConnection(own.url, 'client')
    let monotonic = 0
    const clock = new RedisClock(connection, { slotKey, monotonic: () => monotonic }).start()
    try {
      await untilReady(connection)
      expect(await clock.sync()).toBe(true)
      const read = clock.now()!
      await own.stop()
      monotonic += 1_000
      expect(await clock.sync()).toBe(false)
      expect(clock.now()).toBe(read + 1_000)
    } finally {
      clock.stop()
      connection.disconnect()
      await own.stop()
    }
  })
})

describe('RedisClock on a host whose clock is off', () => {
  const redis = createRedisConnection(testRedisUrl(), 'client')
  afterAll(() => redis.disconnect())

  it('says so once when it goes off by more than a second, and once when it agrees again', async () => {
    const lines: Array<{ level: string; message: string }> = []
    const log = {
      warn: (_fields: Record<string, unknown>, message: string) =>
        lines.push({ level: 'warn', message }),
      info: (_fields: Record<string, unknown>, message: string) =>
        lines.push({ level: 'info', message }),
    }
    let aheadMs = 0
    const clock = new RedisClock(redis, { slotKey, log, wall: () => Date.now() + aheadMs })
    await untilReady(redis)
    expect(await clock.sync()).toBe(true)
    expect(lines).toEqual([])
    aheadMs = 300_000
    expect(await clock.sync()).toBe(true)
    expect(await clock.sync()).toBe(true)
    expect(lines).toHaveLength(1)
    expect(lines[0]!.level).toBe('warn')
    expect(lines[0]!.message).toMatch(/clock is 30\d\.\d s ahead of Redis's.*synchronise/)
    aheadMs = 0
    expect(await clock.sync()).toBe(true)
    expect(lines.map((line) => line.level)).toEqual(['warn', 'info'])
  })
})
