import { afterAll, describe, expect, it } from 'vitest'
import { parseSchedule, type CronSchedule } from '../../src/pipeline/index.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { claimTick, nearestTick, type TickPayload } from '../../src/runner/ticks.ts'
import { testRedisUrl, uniquePrefix, untilReady } from '../support/redis.ts'

function schedule(text: string): CronSchedule {
  const parsed = parseSchedule(text)
  if (!('schedule' in parsed)) throw new Error(parsed.problem)
  return parsed.schedule
}

describe("a cron job's tick, named by Redis's clock", () => {
  it('is the instant of the schedule nearest to the time the queue job is taken', () => {
    const every = schedule('@every 2s')
    expect(nearestTick(every, 1_700_000_000_999)).toBe(1_700_000_000_000)
    expect(nearestTick(every, 1_700_000_001_001)).toBe(1_700_000_002_000)
    const minutely = schedule('CRON_TZ=UTC 0 * * * * *')
    expect(nearestTick(minutely, Date.UTC(2026, 0, 1, 12, 0, 20))).toBe(Date.UTC(2026, 0, 1, 12, 0))
    expect(nearestTick(minutely, Date.UTC(2026, 0, 1, 12, 0, 45))).toBe(Date.UTC(2026, 0, 1, 12, 1))
    // The zone counts: 09:00 in London is 08:00 UTC in summer.
    const nine = schedule('CRON_TZ=Europe/London 0 0 9 * * *')
    expect(nearestTick(nine, Date.UTC(2026, 6, 1, 8, 10))).toBe(Date.UTC(2026, 6, 1, 8, 0))
  })

  it('is claimed by one queue job only; the one that claimed it finds it again when taken again', async () => {
    const redis = createRedisConnection(testRedisUrl(), 'worker')
    afterAll(() => redis.disconnect())
    await untilReady(redis)
    const prefix = uniquePrefix('ticks')
    const payload: TickPayload = { kind: 'tick', chainId: 31337, externalJobId: 'job-a' }
    const every = schedule('@every 2s')
    const now = 1_700_000_000_100
    expect(await claimTick(redis, prefix, payload, 'q1', now, every)).toBe(1_700_000_000_000)
    // A second firing near the same instant (another runner's, a late one) runs nothing.
    expect(await claimTick(redis, prefix, payload, 'q2', now + 300, every)).toBeUndefined()
    // The first queue job taken again (its runner died) runs the tick it claimed, whatever the time.
    expect(await claimTick(redis, prefix, payload, 'q1', now + 5_000, every)).toBe(
      1_700_000_000_000,
    )
    // A late firing after no runner ran runs the current tick, never the missed ones.
    expect(await claimTick(redis, prefix, payload, 'q3', now + 60_000, every)).toBe(
      1_700_000_060_000,
    )
    // Another job's ticks are its own.
    expect(
      await claimTick(redis, prefix, { ...payload, externalJobId: 'job-b' }, 'q4', now, every),
    ).toBe(1_700_000_000_000)
  })
})
