import { Queue } from 'bullmq'
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { tickWriterSpec } from '../../src/dev/pushed-value.ts'
import { loadJobSpec } from '../../src/pipeline/index.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { JobRegistry, registerJob } from '../../src/runner/job-registry.ts'
import { startCronTicker } from '../../src/runner/cron-ticker.ts'
import {
  claimTicks,
  dueTick,
  firingJobId,
  nextTickAfter,
  ticksBetween,
  type TickPayload,
} from '../../src/runner/ticks.ts'
import { testRedisUrl, uniquePrefix, untilReady } from '../support/redis.ts'
import { scheduleOf } from '../support/schedule.ts'

describe("a cron job's tick, named by Redis's clock", () => {
  it('is the instant of the schedule due at a time, the next one after it', () => {
    const every = scheduleOf('@every 2s')
    expect(dueTick(every, 1_700_000_001_999)).toBe(1_700_000_000_000)
    expect(dueTick(every, 1_700_000_002_000)).toBe(1_700_000_002_000)
    expect(nextTickAfter(every, 1_700_000_002_000)).toBe(1_700_000_004_000)
    const minutely = scheduleOf('CRON_TZ=UTC 0 * * * * *')
    const noon = Date.UTC(2026, 0, 1, 12, 0)
    expect(dueTick(minutely, noon + 45_000)).toBe(noon)
    expect(dueTick(minutely, noon)).toBe(noon)
    expect(dueTick(minutely, noon - 1)).toBe(noon - 60_000)
    expect(nextTickAfter(minutely, noon)).toBe(noon + 60_000)
    expect(nextTickAfter(minutely, noon - 1)).toBe(noon)
    // The zone counts: 09:00 in London is 08:00 UTC in summer.
    const nine = scheduleOf('CRON_TZ=Europe/London 0 0 9 * * *')
    expect(dueTick(nine, Date.UTC(2026, 6, 1, 8, 10))).toBe(Date.UTC(2026, 6, 1, 8, 0))
  })

  it('is claimed by one queue job only; a slow firing runs the ticks it missed, a late one after no runner ran only the current', async () => {
    const redis = createRedisConnection(testRedisUrl(), 'worker')
    afterAll(() => redis.disconnect())
    await untilReady(redis)
    const prefix = uniquePrefix('ticks')
    const every = scheduleOf('@every 2s')
    const t0 = 1_700_000_000_000
    const payload = (tick: number): TickPayload => ({
      kind: 'tick',
      chainId: 31337,
      externalJobId: 'job-a',
      tick,
    })
    expect(await claimTicks(redis, prefix, payload(t0), 'q1', t0 + 100, every)).toEqual([t0])
    // The same tick's firing added again once the first had run (a runner that saw it late): nothing.
    expect(await claimTicks(redis, prefix, payload(t0), 'q2', t0 + 300, every)).toEqual([])
    // The first queue job taken again (its runner died) runs the tick it claimed, whatever the time.
    expect(await claimTicks(redis, prefix, payload(t0), 'q1', t0 + 5_000, every)).toEqual([t0])
    // A firing taken late by a busy runner runs the ticks no firing claimed since, in order, up to
    // its own: never one that is not due yet.
    expect(await claimTicks(redis, prefix, payload(t0 + 6_000), 'q3', t0 + 7_900, every)).toEqual([
      t0 + 2_000,
      t0 + 4_000,
      t0 + 6_000,
    ])
    // After no runner ran for longer than the catch-up window: the current tick, not the missed ones.
    expect(await claimTicks(redis, prefix, payload(t0 + 90_000), 'q4', t0 + 90_100, every)).toEqual(
      [t0 + 90_000],
    )
    // Another job's ticks are its own.
    expect(
      await claimTicks(redis, prefix, { ...payload(t0), externalJobId: 'job-b' }, 'q5', t0, every),
    ).toEqual([t0])
  })

  it('between two times: the instants of an @every schedule and of a pattern, ascending', () => {
    expect(ticksBetween(scheduleOf('@every 2s'), 1_000, 6_000)).toEqual([2_000, 4_000, 6_000])
    const minutely = scheduleOf('CRON_TZ=UTC 0 * * * * *')
    const noon = Date.UTC(2026, 0, 1, 12, 0)
    expect(ticksBetween(minutely, noon - 90_000, noon)).toEqual([noon - 60_000, noon])
  })
})

describe('the cron ticker', () => {
  const connection = createRedisConnection(testRedisUrl(), 'worker')
  const prefix = uniquePrefix('ticks-ticker')
  const queues = [0, 1].map(() => new Queue('requests-31337', { connection, prefix }))
  afterAll(async () => {
    for (const queue of queues) await queue.close()
    connection.disconnect()
  })

  it("adds one firing per tick that falls due by Redis's clock, however many runners add it; an earlier release's scheduler goes", async () => {
    const externalJobId = '0b6f3c1e-2d4a-4e8b-9c7d-1a2b3c4d5e6f'
    const spec = tickWriterSpec({
      name: 'ticker',
      externalJobId,
      schedule: '@every 1s',
      pushed: `0x${'11'.repeat(20)}`,
    })
    const { job, problems } = loadJobSpec(spec, 'jobs/ticker.toml')
    expect(problems).toEqual([])
    const registry = new JobRegistry([registerJob(job!)])
    await queues[0]!.upsertJobScheduler(`cron-${externalJobId}`, { every: 1_000 }, { name: 'tick' })
    // Two runners' tickers on one Redis, on a clock this test moves: Redis's as each process reads it.
    let redisNow = 1_700_000_000_500
    const clock = { now: () => redisNow }
    const log = pino({ level: 'silent' })
    const tickers = await Promise.all(
      queues.map((queue) => startCronTicker(queue, registry, 31337, clock, log)),
    )
    try {
      expect(await queues[0]!.getJobSchedulers()).toEqual([])
      const firings = async () =>
        (await queues[0]!.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed']))
          // (The old scheduler's first firing, queued at once, names no tick: runTick drops it.)
          .filter((queued) => queued.id?.startsWith('tick-'))
          .map((queued) => ({ id: queued.id, data: queued.data as TickPayload }))
          .sort((a, b) => a.data.tick - b.data.tick)
      // Seen first at 0.5 s past a tick: that tick is not made up.
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      expect(await firings()).toEqual([])
      for (const step of [1, 2, 3]) {
        redisNow = 1_700_000_000_000 + step * 1_000 + 10
        await waitFor(
          `the firing of tick ${step}`,
          async () => (await firings()).length === step,
          30_000,
        )
      }
      // A second later by Redis's clock, the host's timers no matter: once each, for its own tick.
      expect(await firings()).toEqual(
        [1, 2, 3].map((step) => {
          const tick = 1_700_000_000_000 + step * 1_000
          return {
            id: firingJobId(externalJobId, tick),
            data: { kind: 'tick', chainId: 31337, externalJobId, tick },
          }
        }),
      )
    } finally {
      for (const ticker of tickers) ticker.stop()
    }
  })
})
