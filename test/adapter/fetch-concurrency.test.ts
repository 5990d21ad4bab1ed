import { afterAll, describe, expect, it } from 'vitest'
import { setTimeout as delay } from 'node:timers/promises'
import { parseSettings } from '../../src/config/settings.ts'
import { startFetchWorkers } from '../../src/adapter/workers.ts'
import { waitFor } from '../../src/dev/process.ts'
import { metricsText } from '../../src/metrics/index.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { createFetchQueue } from '../../src/queue/factories.ts'
import type { FetchFunction } from '../../src/queue/fetch-worker.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { deleteKeys } from './support.ts'

const usedPrefixes: string[] = []
afterAll(async () => {
  for (const prefix of usedPrefixes) await deleteKeys(testRedisUrl(), `${prefix}:*`)
})

const JOBS = 500
/** Jobs answered before the worker's figures are read: it has had time to adapt. */
const SETTLED = 350

/**
 * Runs JOBS distinct fetches through a real fetch worker on real Redis, all queued at once, each
 * taking `timeOf(running)` ms. Returns the most that ran at once after SETTLED were answered, and
 * the worker's limit and its gauge at the end.
 */
async function floodWorker(timeOf: (running: number) => number) {
  const prefix = uniquePrefix('concurrency').replace(/:/g, '.')
  usedPrefixes.push(prefix)
  const settings = parseSettings({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: prefix,
    SPORTS_URL: 'http://127.0.0.1:9/',
    FETCH_WORKER_CONCURRENCY: '32',
    FETCH_WORKER_MIN_CONCURRENCY: '2',
    RATE_LIMIT_SPORTS_PER_SECOND: '100000',
  })
  let running = 0
  let answered = 0
  let peakSettled = 0
  const fetch: FetchFunction = async () => {
    running++
    if (answered >= SETTLED) peakSettled = Math.max(peakSettled, running)
    await delay(timeOf(running))
    running--
    answered++
    return { status: 200, result: 'success', data: {} }
  }
  const workers = await startFetchWorkers({ settings, families: ['sports'], fetch })
  const connection = createRedisConnection(settings.REDIS_URL, 'client')
  const queue = createFetchQueue(settings, 'sports', connection)
  try {
    await queue.addBulk(
      Array.from({ length: JOBS }, (_, index) => ({
        name: 'fetch',
        data: { endpoint: 'game-odds', params: { gameId: String(index) } },
      })),
    )
    // The limit seen every 50 ms: a probe at the lowest holds it for a window (8 fetches).
    const limits: number[] = []
    await waitFor(
      'every fetch answered',
      async () => {
        limits.push(workers.workers[0]!.concurrency)
        return answered === JOBS
      },
      180_000,
      50,
    )
    const gauge = /feedrunner_fetch_concurrency\{family="sports"\} (\d+)/.exec(await metricsText())
    const falls = limits.filter((limit, index) => limit === 2 && (limits[index - 1] ?? 32) > 2)
    return {
      peakSettled,
      limit: workers.workers[0]!.concurrency,
      gauge: Number(gauge?.[1]),
      fallsToLowest: falls.length,
    }
  } finally {
    await queue.close()
    connection.disconnect()
    await workers.close()
  }
}

describe("a fetch worker's concurrency follows its fetches' times, on real Redis", () => {
  it('runs fewer at once when every fetch beside another makes both slower, and BullMQ keeps to it', async () => {
    // Alone 15 ms; each fetch running beside it adds 15 ms, as fetches sharing one CPU do (large
    // against the timers' lateness on a loaded machine, which is the same for every fetch).
    const figures = await floodWorker((running) => 15 * running)
    expect(figures.limit).toBeLessThan(16)
    expect(figures.peakSettled).toBeLessThan(16)
    expect(figures.gauge).toBe(figures.limit)
  })

  it('keeps running the most at once when a fetch takes as long however many run (the network)', async () => {
    // 300 ms: long against a loaded machine's timer lateness.
    const figures = await floodWorker(() => 300)
    expect(figures.peakSettled).toBe(32)
    expect(figures.limit).toBe(32)
    // One probe at the lowest measures the baseline, when the worker is first busy; a second only
    // if a window ran twice as slow. The 32 fetches that the worker took before the probe settle
    // at once, and BullMQ takes the successors of many of them as the probe begins: a probe that
    // counted those fetches as its own measured nothing, and ran again every other window.
    expect(figures.fallsToLowest).toBeGreaterThanOrEqual(1)
    expect(figures.fallsToLowest).toBeLessThanOrEqual(2)
  })
})
