import { Queue } from 'bullmq'
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { tickWriterSpec } from '../../src/dev/pushed-value.ts'
import { loadJobSpec, parseSchedule, type CronSchedule } from '../../src/pipeline/index.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { JobRegistry, registerJob } from '../../src/runner/job-registry.ts'
import {
  claimTicks,
  nearestTick,
  schedulerIdOf,
  syncCronSchedules,
  ticksBetween,
  type TickPayload,
} from '../../src/runner/ticks.ts'
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

  it('is claimed by one queue job only; a slow firing runs the ticks it missed, a late one after no runner ran only the current', async () => {
    const redis = createRedisConnection(testRedisUrl(), 'worker')
    afterAll(() => redis.disconnect())
    await untilReady(redis)
    const prefix = uniquePrefix('ticks')
    const payload: TickPayload = { kind: 'tick', chainId: 31337, externalJobId: 'job-a' }
    const every = schedule('@every 2s')
    const t0 = 1_700_000_000_000
    expect(await claimTicks(redis, prefix, payload, 'q1', t0 + 100, every)).toEqual([t0])
    // A second firing near the same instant (another runner's) runs nothing.
    expect(await claimTicks(redis, prefix, payload, 'q2', t0 + 300, every)).toEqual([])
    // The first queue job taken again (its runner died) runs the tick it claimed, whatever the time.
    expect(await claimTicks(redis, prefix, payload, 'q1', t0 + 5_000, every)).toEqual([t0])
    // A firing taken late by a busy runner runs the ticks no firing claimed since, in order.
    expect(await claimTicks(redis, prefix, payload, 'q3', t0 + 6_100, every)).toEqual([
      t0 + 2_000,
      t0 + 4_000,
      t0 + 6_000,
    ])
    // After no runner ran for longer than the catch-up window: the current tick, not the missed ones.
    expect(await claimTicks(redis, prefix, payload, 'q4', t0 + 90_100, every)).toEqual([
      t0 + 90_000,
    ])
    // Another job's ticks are its own.
    expect(
      await claimTicks(redis, prefix, { ...payload, externalJobId: 'job-b' }, 'q5', t0, every),
    ).toEqual([t0])
  })

  it('between two times: the instants of an @every schedule and of a pattern, ascending', () => {
    expect(ticksBetween(schedule('@every 2s'), 1_000, 6_100)).toEqual([2_000, 4_000, 6_000])
    const minutely = schedule('CRON_TZ=UTC 0 * * * * *')
    const noon = Date.UTC(2026, 0, 1, 12, 0)
    expect(ticksBetween(minutely, noon - 90_000, noon + 10_000)).toEqual([noon - 60_000, noon])
  })
})

describe("a cron job's scheduler", () => {
  const connection = createRedisConnection(testRedisUrl(), 'worker')
  const queue = new Queue('requests-31337', { connection, prefix: uniquePrefix('ticks-sync') })
  afterAll(async () => {
    await queue.close()
    connection.disconnect()
  })

  it('is written again when its next firing was lost (a failover), and left alone while it is queued', async () => {
    const externalJobId = '0b6f3c1e-2d4a-4e8b-9c7d-1a2b3c4d5e6f'
    const spec = tickWriterSpec({
      name: 'sync',
      externalJobId,
      schedule: '@every 3600s',
      pushed: `0x${'11'.repeat(20)}`,
    })
    const { job, problems } = loadJobSpec(spec, 'jobs/sync.toml')
    expect(problems).toEqual([])
    const registry = new JobRegistry([registerJob(job!)])
    const sync = () => syncCronSchedules(queue, registry, 31337, pino({ level: 'silent' }))
    const id = schedulerIdOf(externalJobId)
    const firing = async () => {
      const next = (await queue.getJobScheduler(id))?.next
      return next === undefined ? undefined : queue.getJob(`repeat:${id}:${next}`)
    }
    await sync()
    const queued = await firing()
    expect(queued).toBeDefined()
    await sync()
    expect((await firing())?.id).toBe(queued!.id)
    // What a failover to a replica that kept the scheduler but not its firing leaves.
    // (BullMQ refuses to remove a scheduler's job: it is taken out of Redis as the failover loses it.)
    const base = `${queue.opts.prefix}:${queue.name}`
    await connection.del(`${base}:${queued!.id}`)
    await connection.zrem(`${base}:delayed`, queued!.id!)
    expect(await firing()).toBeUndefined()
    await sync()
    expect(await firing()).toBeDefined()
  })
})
