import { Queue, Worker } from 'bullmq'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { metricsText, observeWaits, watchQueue } from '../../src/metrics/index.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { RedisClock } from '../../src/queue/redis-clock.ts'
import { addRequestJob } from '../../src/runner/requests-queue.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { parsePrometheus, valueOf } from './support.ts'

const SKEW_MS = 120_000

/**
 * feedrunner_queue_wait_seconds when the process that adds a job and the one that takes it run on
 * hosts whose wall clocks disagree: the job is stamped, and its wait measured, by Redis's clock. By
 * the hosts' clocks a job added on a host 120 s behind waited 120 s more than it did, and one added
 * 120 s ahead waited less than nothing (clamped to 0).
 */
describe('the queue wait across hosts whose clocks disagree', () => {
  const closers: Array<() => Promise<unknown> | void> = []
  afterEach(async () => {
    vi.useRealTimers()
    for (const close of closers.splice(0).reverse()) await close()
  })

  /** A queue of its own on the test Redis, and Redis's clock as a process reads it. */
  async function probeQueue() {
    const connection = createRedisConnection(testRedisUrl(), 'worker')
    closers.push(() => connection.disconnect())
    const prefix = uniquePrefix('queue-wait-clock')
    // Each process reads Redis's clock by TIME and its monotonic clock; the wall clock moves neither.
    const clock = new RedisClock(connection, { slotKey: `${prefix}:clock` })
    expect(await clock.sync()).toBe(true)
    const queue = new Queue('requests-probe', { connection, prefix })
    closers.push(() => queue.close())
    return { connection, prefix, clock, queue }
  }

  it.each([
    { adderClock: 'behind', offsetMs: -SKEW_MS },
    { adderClock: 'ahead', offsetMs: SKEW_MS },
  ])(
    'measures a job added on a host whose clock is 120 s $adderClock as the moment it waited',
    async ({ adderClock, offsetMs }) => {
      const { connection, prefix, clock, queue } = await probeQueue()

      // The adding host's wall clock is off; timers still run (only Date is faked).
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + offsetMs })
      const payload = { probe: true } as unknown as Parameters<typeof addRequestJob>[1]
      await addRequestJob(queue, payload, `probe-${adderClock}`, clock)
      vi.useRealTimers()

      const label = `probe-${adderClock}-${prefix}`
      const worker = new Worker('requests-probe', async () => undefined, {
        connection,
        prefix,
        autorun: false,
      })
      closers.push(() => worker.close())
      observeWaits(worker, label, clock)
      void worker.run()
      const observed = async () =>
        valueOf(parsePrometheus(await metricsText()), 'feedrunner_queue_wait_seconds_count', {
          queue: label,
        })
      await waitFor('the worker to take the job', async () => (await observed()) === 1, 30_000)
      const waited = valueOf(
        parsePrometheus(await metricsText()),
        'feedrunner_queue_wait_seconds_sum',
        { queue: label },
      )
      // What it really waited: the time from its add to its take on this machine, well under the skew.
      expect(waited).toBeGreaterThan(0)
      expect(waited).toBeLessThan(SKEW_MS / 1_000 / 4)
    },
  )

  it('ages the oldest waiting job by Redis clock when the scraping host is 120 s ahead', async () => {
    const { prefix, clock, queue } = await probeQueue()
    const payload = { probe: true } as unknown as Parameters<typeof addRequestJob>[1]
    await addRequestJob(queue, payload, 'probe-waiting', clock)
    const label = `oldest-${prefix}`
    closers.push(watchQueue(label, queue, clock))

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + SKEW_MS })
    const scraped = parsePrometheus(await metricsText())
    vi.useRealTimers()
    const age = valueOf(scraped, 'feedrunner_queue_oldest_waiting_seconds', { queue: label })
    expect(age).toBeGreaterThan(0)
    expect(age).toBeLessThan(SKEW_MS / 1_000 / 4)
  })
})
