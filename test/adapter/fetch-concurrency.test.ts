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
    await waitFor('every fetch answered', async () => answered === JOBS, 180_000, 50)
    const gauge = /feedrunner_fetch_concurrency\{family="sports"\} (\d+)/.exec(await metricsText())
    return { peakSettled, limit: workers.workers[0]!.concurrency, gauge: Number(gauge?.[1]) }
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
    // 300 ms: long against a loaded machine's timer lateness, which grows with the fetches running
    // (each is a job to take and settle on one event loop) and at 30 ms read as a CPU bound in CI.
    const figures = await floodWorker(() => 300)
    expect(figures.peakSettled).toBe(32)
    expect(figures.limit).toBe(32)
  })
})
