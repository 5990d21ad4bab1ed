import { describe, expect, it } from 'vitest'
import type { History, PushFact } from '../../chaos/history.ts'
import { cronCaughtUp } from '../../chaos/pushes.ts'
import { NODE_1, T0, cleanHistory, fault, invariantsOf, ms } from './history-fixtures.ts'

// The cron job's invariants (chaos/pushes.ts), handed doctored histories: a cron job @every 2s whose
// ticks the chain holds, each with one thing wrong.

const EVERY = 2_000

function push(tick: number, nonce: number, reverted = false): PushFact {
  return {
    tick,
    hash: `0x${nonce.toString(16).padStart(64, 'c')}`,
    from: NODE_1,
    nonce,
    block: 10 + nonce,
    reverted,
  }
}

/** A minute of ticks, every one written once, the stack stopped 60 s after its start. */
async function withCron(pushes?: PushFact[]): Promise<History> {
  const history = await cleanHistory()
  const startedAt = ms(T0)
  const ticks = Array.from({ length: 30 }, (_, index) => startedAt + index * EVERY)
  return {
    ...history,
    startedAt,
    stoppedAt: startedAt + 60_000,
    cronEveryMs: EVERY,
    pushes: pushes ?? ticks.map((tick, index) => push(tick, 100 + index)),
  }
}

describe('the fault search invariants of a cron job', () => {
  it('find nothing wrong when each tick is written once and they go on to the end', async () => {
    const history = await withCron()
    expect(invariantsOf(history)).toEqual([])
    expect(cronCaughtUp(history, history.stoppedAt)).toBe(true)
  })

  it('find a tick written twice, and a write that reverted', async () => {
    const history = await withCron()
    const twice = { ...history, pushes: [...history.pushes, push(history.pushes[3]!.tick, 500)] }
    expect(invariantsOf(twice)).toEqual(['one-push-per-tick'])
    const reverted = {
      ...history,
      pushes: [...history.pushes.slice(0, 5), push(history.pushes[5]!.tick, 105, true)],
    }
    expect(invariantsOf(reverted)).toContain('push-reverted')
  })

  it('find ticks that stopped after the faults, and say nothing while the time after them is too short', async () => {
    const history = await withCron()
    // A flush at 10-11 s, and no tick written after 14 s: the schedule ran 60 s.
    const stopped = {
      ...history,
      faults: [
        fault({
          kind: 'redis-flush',
          fromMs: history.startedAt + 10_000,
          toMs: history.startedAt + 11_000,
        }),
      ],
      pushes: history.pushes.filter((written) => written.tick < history.startedAt + 14_000),
    }
    expect(invariantsOf(stopped)).toEqual(['cron-live'])
    expect(cronCaughtUp(stopped, stopped.stoppedAt)).toBe(false)
    // The same, stopped 13 s after the flush: too short to judge (the key lease, 5 s here, and two
    // periods after the faults, two periods before the stop).
    const short = { ...stopped, stoppedAt: history.startedAt + 24_000 }
    expect(invariantsOf(short)).toEqual([])
  })

  it('find a cron job silent from its start until the first fault, though ticks came after', async () => {
    const history = await withCron()
    const flush = fault({
      kind: 'redis-flush',
      fromMs: history.startedAt + 20_000,
      toMs: history.startedAt + 21_000,
    })
    const silentFirst = {
      ...history,
      faults: [flush],
      pushes: history.pushes.filter((written) => written.tick > history.startedAt + 21_000),
    }
    expect(invariantsOf(silentFirst)).toEqual(['cron-live'])
    // Ticks from the start: nothing; a first fault too early to judge the time before it: nothing.
    expect(invariantsOf({ ...history, faults: [flush] })).toEqual([])
    const early = fault({ ...flush, fromMs: history.startedAt + 6_000 })
    expect(invariantsOf({ ...silentFirst, faults: [early] })).toEqual([])
  })

  it('are not read for a schedule without a cron job', async () => {
    const history = await cleanHistory()
    expect(invariantsOf({ ...history, pushes: [push(1, 1), push(1, 2)] })).toEqual([])
  })
})
