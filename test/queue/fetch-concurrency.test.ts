import { describe, expect, it } from 'vitest'
import { FetchConcurrency, PROBE_AFTER_MS } from '../../src/queue/fetch-concurrency.ts'

/**
 * A worker kept busy by a flood, simulated on a clock of its own: whenever fewer than the limit
 * run, another fetch starts; each takes `timeOf(running, now)` ms, `running` counting the fetches
 * in flight when it started (itself included). Returns the limit after each answer, with its time.
 * With `lag`, the worker keeps to the limit as it was that many answers before (BullMQ takes a
 * job's successor as it settles it, under the limit of that moment).
 */
function flood(
  concurrency: FetchConcurrency,
  fetches: number,
  timeOf: (running: number, now: number) => number,
  startAt = 0,
  lag = 0,
): { limits: { at: number; limit: number }[]; end: number } {
  let now = startAt
  const running: { startedAt: number; endsAt: number }[] = []
  const limits: { at: number; limit: number }[] = []
  const workerLimit = () => limits.at(-1 - lag)?.limit ?? concurrency.limit
  let started = 0
  while (limits.length < fetches) {
    while (running.length < workerLimit() && started < fetches) {
      const endsAt = now + timeOf(running.length + 1, now)
      running.push({ startedAt: now, endsAt })
      concurrency.started(now, running.length)
      started++
    }
    running.sort((a, b) => a.endsAt - b.endsAt)
    const next = running.shift()!
    now = next.endsAt
    limits.push({ at: now, limit: concurrency.answered(next.startedAt, now) })
  }
  return { limits, end: now }
}

/** `count` fetches one at a time, 3 ms each, from `now`; returns the time after the last. */
function oneAtATime(concurrency: FetchConcurrency, count: number, now: number): number {
  for (let index = 0; index < count; index++) {
    concurrency.started(now, 1)
    concurrency.answered(now, now + 3)
    now += 3
  }
  return now
}

const bounds = { min: 2, max: 32 }

describe('the fetch worker adapts how many fetches it runs at once to their times', () => {
  it('keeps the most when a fetch takes as long whatever runs beside it (a feed on the network)', () => {
    const concurrency = new FetchConcurrency(bounds)
    const { limits } = flood(concurrency, 5_000, () => 100)
    // The first busy window probes at the lowest limit, then the limit goes back and stays.
    const afterProbe = limits.slice(100)
    expect(Math.min(...afterProbe.map((entry) => entry.limit))).toBe(32)
  })

  it('probes with its own fetches only, not those the worker took before the limit fell', () => {
    const concurrency = new FetchConcurrency(bounds)
    // The worker starts 16 more fetches under the old limit after each fall.
    const { limits } = flood(concurrency, 5_000, () => 100, 0, 16)
    // The probe measures two at once once the others are gone; the limit goes back and stays.
    const afterProbe = limits.slice(200)
    expect(Math.min(...afterProbe.map((entry) => entry.limit))).toBe(32)
  })

  it('runs few when each fetch more at once makes every fetch slower (this host is the bound)', () => {
    const concurrency = new FetchConcurrency(bounds)
    // A fetch alone takes 3 ms; every one beside it adds 1.5 ms (the CPU they share).
    const { limits } = flood(concurrency, 20_000, (running) => 3 + 1.5 * (running - 1))
    const settled = limits.slice(2_000).map((entry) => entry.limit)
    // The probe runs two: 4.5 ms. Within TOLERANCE of it, 3 + 1.5 (n - 1) <= 9 at n <= 5; a step
    // up is tried now and then.
    expect(Math.max(...settled)).toBeLessThanOrEqual(6)
    expect(Math.min(...settled)).toBeGreaterThanOrEqual(bounds.min)
    // Probes run through the flood, and the limit comes back from each.
    expect(settled.filter((limit) => limit === bounds.min).length).toBeGreaterThan(0)
    expect(settled.filter((limit) => limit >= 3).length).toBeGreaterThan(settled.length / 2)
  })

  it('grows back when the host is free again', () => {
    const concurrency = new FetchConcurrency(bounds)
    const busy = flood(concurrency, 5_000, (running) => 3 + 1.5 * (running - 1))
    expect(concurrency.limit).toBeLessThanOrEqual(6)
    // The same fetches now wait for the network, not for the CPU.
    const free = flood(concurrency, 3_000, () => 20, busy.end)
    expect(free.limits.at(-1)!.limit).toBe(32)
  })

  it('comes back to the most when the feed got slower for everyone (a probe finds it slow alone too)', () => {
    const concurrency = new FetchConcurrency(bounds)
    const before = flood(concurrency, 3_000, () => 100)
    expect(concurrency.limit).toBe(32)
    // The feed answers three times slower from now on, however many run.
    const after = flood(concurrency, 3_000, () => 300, before.end)
    const probe = after.limits.findIndex((entry) => entry.limit === bounds.min)
    expect(probe).toBeGreaterThan(0)
    // Shrunk until the baseline was stale, then probed; the limit grows back and stays.
    expect(after.limits[probe]!.at - before.end).toBeGreaterThan(PROBE_AFTER_MS)
    expect(after.limits.slice(-1_000).every((entry) => entry.limit === 32)).toBe(true)
  })

  it('measures the baseline again when a busier host makes the old one stale', () => {
    const concurrency = new FetchConcurrency(bounds)
    // A quiet start: one at a time, 3 ms each, sets the baseline (a window is 32 answers).
    const now = oneAtATime(concurrency, 32, 0)
    // Then the host gets busy with other work: every fetch takes 4x, and more with more beside it.
    const { limits } = flood(concurrency, 20_000, (running) => 12 + 1.5 * (running - 1), now)
    // Against the busy host's own time with two running (13.5 ms), 12 + 1.5 (n - 1) <= 27 at
    // n <= 11: the limit settles there, not at the lowest, where the quiet baseline would hold it.
    // (A step up by a quarter tries 16 now and then; a probe runs two for a window.)
    const late = limits.slice(-5_000).map((entry) => entry.limit)
    expect(late.filter((limit) => limit >= 8).length).toBeGreaterThan(late.length * 0.8)
    expect(Math.max(...late)).toBeLessThanOrEqual(16)
  })

  it('does not grow a limit that the traffic does not reach', () => {
    const concurrency = new FetchConcurrency(bounds)
    const busy = flood(concurrency, 5_000, (running) => 3 + 1.5 * (running - 1))
    // Then one at a time, as fast as alone: nothing says more at once would be as fast. (The
    // window open when the flood ended closes on its answers.)
    const now = oneAtATime(concurrency, 8, busy.end)
    const shrunk = concurrency.limit
    expect(shrunk).toBeLessThanOrEqual(6)
    oneAtATime(concurrency, 1_000, now)
    expect(concurrency.limit).toBeLessThanOrEqual(shrunk)
  })

  it('takes a quiet window as the baseline, and shrinks at once when a flood comes', () => {
    const concurrency = new FetchConcurrency(bounds)
    // A window is as many answers as the limit: 32.
    const now = oneAtATime(concurrency, 32, 0)
    const { limits } = flood(concurrency, 200, (running) => 3 + 1.5 * (running - 1), now)
    const changes = limits.filter(
      (entry, index) => entry.limit !== (limits[index - 1]?.limit ?? 32),
    )
    // No probe first: the quiet window measured what a probe would.
    expect(changes[0]!.limit).toBe(16)
  })

  it('is fixed when the lowest and the highest are the same', () => {
    const concurrency = new FetchConcurrency({ min: 8, max: 8 })
    flood(concurrency, 5_000, (running) => 3 * running)
    expect(concurrency.limit).toBe(8)
    expect(new FetchConcurrency({ min: 40, max: 8 }).min).toBe(8)
  })
})
