import { describe, expect, it } from 'vitest'
import type { FluxJob } from '../../../src/runner/flux/flux-job.ts'
import {
  afterAct,
  drumbeatPause,
  dueTrigger,
  type JobTimers,
} from '../../../src/runner/flux/timers.ts'
import { scheduleOf } from '../../support/schedule.ts'

// Which timer of a flux job is due at a look, and the drumbeat's random wait.

function job(fields: Partial<Pick<FluxJob, 'pollTimerMs' | 'idleTimerMs' | 'drumbeat'>>): FluxJob {
  return { ...fields } as FluxJob
}

const drumbeat = (text: string, randomDelayMs = 0) => ({
  schedule: scheduleOf(text),
  randomDelayMs,
})

describe('dueTrigger', () => {
  it('starts the drumbeat at its next instant: one that passed before the first look is not made up', () => {
    const beating = job({ drumbeat: drumbeat('@every 10s') })
    const timers: JobTimers = { lastPollMs: 0 }
    const at = (chainNow: number) =>
      dueTrigger(beating, timers, { chainNow, lastStartedAt: 0, nowMs: 0 })
    expect(at(1_005)).toBeUndefined()
    expect(timers.drumbeat).toEqual({ schedule: '@every 10s', nextMs: 1_010_000 })
    expect(at(1_009.9)).toBeUndefined()
    expect(at(1_010)).toBe('drumbeat')
    expect(timers.drumbeat?.nextMs).toBe(1_020_000)
    expect(at(1_015)).toBeUndefined()
    // Several instants passed while the look was away: one beat, then the next instant after now.
    expect(at(1_047)).toBe('drumbeat')
    expect(timers.drumbeat?.nextMs).toBe(1_050_000)
  })

  it('works the next instant out again, without a beat, when a reload changed the schedule', () => {
    const timers: JobTimers = {
      lastPollMs: 0,
      drumbeat: { schedule: '@every 10s', nextMs: 1_010_000 },
    }
    const changed = job({ drumbeat: drumbeat('@every 1m') })
    expect(
      dueTrigger(changed, timers, { chainNow: 1_011, lastStartedAt: 0, nowMs: 0 }),
    ).toBeUndefined()
    expect(timers.drumbeat).toEqual({ schedule: '@every 1m', nextMs: 1_020_000 })
  })

  it('reads a cron schedule on the chain clock, in its time zone', () => {
    const timers: JobTimers = { lastPollMs: 0 }
    const quarterHour = job({ drumbeat: drumbeat('CRON_TZ=UTC 0 */15 * * * *') })
    const noon = Date.UTC(2026, 10, 30, 12, 0, 0) / 1000
    dueTrigger(quarterHour, timers, { chainNow: noon + 1, lastStartedAt: 0, nowMs: 0 })
    expect(timers.drumbeat?.nextMs).toBe((noon + 15 * 60) * 1000)
  })

  it('the heartbeat before the poll; the poll only when its period has passed on this process', () => {
    const both = job({ idleTimerMs: 30_000, pollTimerMs: 1_000 })
    const timers: JobTimers = { lastPollMs: 5_000 }
    expect(dueTrigger(both, timers, { chainNow: 1_030, lastStartedAt: 1_000, nowMs: 9_000 })).toBe(
      'idle',
    )
    expect(timers.lastPollMs).toBe(5_000)
    expect(dueTrigger(both, timers, { chainNow: 1_029, lastStartedAt: 1_000, nowMs: 5_999 })).toBe(
      undefined,
    )
    expect(dueTrigger(both, timers, { chainNow: 1_029, lastStartedAt: 1_000, nowMs: 6_000 })).toBe(
      'poll',
    )
    expect(timers.lastPollMs).toBe(6_000)
  })

  it('none due with every timer off', () => {
    expect(
      dueTrigger(job({}), { lastPollMs: 0 }, { chainNow: 9e9, lastStartedAt: 0, nowMs: 9e12 }),
    ).toBe(undefined)
  })
})

describe("afterAct: a failed heartbeat waits as Chainlink's retry ticker does", () => {
  it('a minute at first, doubling up to an hour, neither longer than the idle period', () => {
    const hourly = job({ idleTimerMs: 3_600_000 })
    const timers: JobTimers = { lastPollMs: 0 }
    const waits: number[] = []
    for (let i = 0; i < 8; i++) {
      afterAct(hourly, timers, { trigger: 'idle', ok: false }, 1_000)
      waits.push(timers.retry!.waitMs)
    }
    expect(waits).toEqual([60, 120, 240, 480, 960, 1_920, 3_600, 3_600].map((s) => s * 1_000))
    expect(timers.retry?.atMs).toBe(1_000 + 3_600_000)
    const short = job({ idleTimerMs: 2_000 })
    const shortTimers: JobTimers = { lastPollMs: 0 }
    afterAct(short, shortTimers, { trigger: 'idle', ok: false }, 0)
    afterAct(short, shortTimers, { trigger: 'idle', ok: false }, 0)
    expect(shortTimers.retry).toEqual({ atMs: 2_000, waitMs: 2_000 })
  })

  it('holds the heartbeat back until then, not the poll; any act that did not fail ends the wait', () => {
    const both = job({ idleTimerMs: 30_000, pollTimerMs: 1_000 })
    const timers: JobTimers = { lastPollMs: 0 }
    afterAct(both, timers, { trigger: 'idle', ok: false }, 10_000)
    const look = (nowMs: number) =>
      dueTrigger(both, timers, { chainNow: 2_000, lastStartedAt: 1_000, nowMs })
    expect(look(10_500)).toBe('poll')
    expect(look(10_600)).toBeUndefined()
    expect(look(40_000)).toBe('idle')
    afterAct(both, timers, { trigger: 'poll', ok: false }, 40_000)
    expect(timers.retry?.waitMs).toBe(30_000)
    afterAct(both, timers, { trigger: 'poll', ok: true }, 40_000)
    expect(timers.retry).toBeUndefined()
  })
})

describe('drumbeatPause', () => {
  it('does not wait without a random delay, and says it waited with one', async () => {
    const signal = new AbortController().signal
    expect(await drumbeatPause(job({ drumbeat: drumbeat('@every 10s') }), signal)).toBe(false)
    expect(await drumbeatPause(job({ drumbeat: drumbeat('@every 10s', 50) }), signal)).toBe(true)
  })

  it('ends when the monitor stops', async () => {
    const stopping = new AbortController()
    const waiting = drumbeatPause(
      job({ drumbeat: drumbeat('@every 10s', 3_600_000) }),
      stopping.signal,
    )
    stopping.abort(new Error('stopping'))
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' })
  })
})
