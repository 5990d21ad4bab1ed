import { describe, expect, it } from 'vitest'
import { plansByPurpose } from '../../chaos/admission.ts'
import { LANE_OF, runsRunner, scheduleOf } from '../../chaos/schedule.ts'
import { Random } from '../../chaos/random.ts'

// `npm run chaos -- --seed N` replays a schedule: everything it does is drawn from the seed alone.

describe('fault search schedules', () => {
  it('a seed draws the same schedule every time', () => {
    for (const seed of [0, 1, 42, 20261122, 0xffffffff]) {
      const first = scheduleOf(seed)
      expect(scheduleOf(seed)).toEqual(first)
      // Nothing in it depends on the process that drew it (a replay runs in another one).
      expect(JSON.parse(JSON.stringify(first))).toEqual(first)
    }
  })

  it('different seeds draw different schedules', () => {
    const drawn = new Set(Array.from({ length: 50 }, (_, seed) => JSON.stringify(scheduleOf(seed))))
    expect(drawn.size).toBe(50)
  })

  it('every schedule stays in its bounds: 30-60 s, 2-3 runners, faults inside, a lane one fault at a time', () => {
    for (let seed = 0; seed < 300; seed++) {
      const schedule = scheduleOf(seed)
      expect(schedule.durationMs).toBeGreaterThanOrEqual(30_000)
      expect(schedule.durationMs).toBeLessThanOrEqual(60_000)
      const runners = schedule.parts.filter((part) => runsRunner(part.kind))
      expect(runners.length).toBeGreaterThanOrEqual(2)
      expect(runners.length).toBeLessThanOrEqual(3)
      expect(schedule.requests.length).toBeGreaterThan(0)
      expect(schedule.faults.length).toBeGreaterThan(0)
      const lastStart = new Map<string, number>()
      for (const fault of schedule.faults) {
        expect(fault.atMs).toBeGreaterThanOrEqual(3_000)
        expect(fault.atMs).toBeLessThanOrEqual(schedule.durationMs - 3_000)
        const lane = LANE_OF[fault.kind]
        expect(fault.atMs).toBeGreaterThan(lastStart.get(lane) ?? -1)
        lastStart.set(lane, fault.atMs)
        if (fault.kind === 'kill')
          expect(schedule.parts.map((part) => part.name)).toContain(fault.part)
      }
      expect(schedule.faults.filter((fault) => fault.kind === 'cancel-storm').length).toBeLessThan(
        2,
      )
    }
  })

  it('over many seeds every fault kind, clock offsets and `feedrunner start` come up', () => {
    const kinds = new Set<string>()
    let skewed = 0
    let withStart = 0
    for (let seed = 0; seed < 200; seed++) {
      const schedule = scheduleOf(seed)
      for (const fault of schedule.faults) kinds.add(fault.kind)
      if (schedule.parts.some((part) => part.clockOffsetSeconds !== 0)) skewed++
      if (schedule.parts.some((part) => part.kind === 'start')) withStart++
    }
    expect([...kinds].sort()).toEqual(Object.keys(LANE_OF).sort())
    expect(skewed).toBeGreaterThan(50)
    expect(withStart).toBeGreaterThan(20)
  })
})

describe('fault search requesters', () => {
  it('several consumers make the requests; the busiest passes REQUESTER_MAX_REQUESTS_PER_MINUTE, no other reaches it', () => {
    let burstsPastConcurrency = 0
    for (let seed = 0; seed < 300; seed++) {
      const schedule = scheduleOf(seed)
      const plans = [...plansByPurpose(schedule).values()]
      expect(schedule.requesters).toBeGreaterThanOrEqual(3)
      expect(schedule.requesters).toBeLessThanOrEqual(4)
      const made = new Array<number>(schedule.requesters).fill(0)
      for (const plan of plans) {
        expect(plan.requester).toBeGreaterThanOrEqual(0)
        expect(plan.requester).toBeLessThan(schedule.requesters)
        made[plan.requester]! += 1
      }
      // Every storm request has its requester as the paced ones do.
      expect(plans.length).toBe(
        schedule.requests.length +
          schedule.faults.reduce(
            (sum, fault) => sum + (fault.kind === 'cancel-storm' ? fault.requests.length : 0),
            0,
          ),
      )
      const [busiest = 0, ...others] = made
      const { maxConcurrentRuns, maxRequestsPerMinute } = schedule.admission
      expect(busiest).toBeGreaterThan(maxRequestsPerMinute)
      expect(others.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0)
      for (const count of others) expect(count).toBeLessThan(maxRequestsPerMinute)
      expect(maxConcurrentRuns).toBeGreaterThan(0)
      const burst = new Map<number, number>()
      for (const plan of schedule.requests.filter((request) => request.requester === 0))
        burst.set(plan.atMs, (burst.get(plan.atMs) ?? 0) + 1)
      if (Math.max(...burst.values()) > maxConcurrentRuns) burstsPastConcurrency++
    }
    // Bursts that start more runs of one requester at once than REQUESTER_MAX_CONCURRENT_RUNS allows.
    expect(burstsPastConcurrency).toBeGreaterThan(20)
  })
})

describe('Random', () => {
  it('a fork depends on the seed and its label only, not on what was drawn before', () => {
    const fresh = new Random(7).fork('faults').uint32()
    const used = new Random(7)
    for (let draw = 0; draw < 10; draw++) used.next()
    expect(used.fork('faults').uint32()).toBe(fresh)
    expect(new Random(7).fork('requests').uint32()).not.toBe(fresh)
  })

  it('int stays within its bounds and reaches both', () => {
    const random = new Random(3)
    const seen = new Set<number>()
    for (let draw = 0; draw < 1_000; draw++) seen.add(random.int(2, 5))
    expect([...seen].sort()).toEqual([2, 3, 4, 5])
  })
})
