import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { parseSettings, type Settings } from '../../src/config/settings.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { createFetchWorker, type FetchWorker } from '../../src/queue/factories.ts'
import { fetchJobId } from '../../src/queue/fetch-job.ts'
import {
  FetchQueueClient,
  FetchWaitTimeoutError,
  QueueUnavailableError,
} from '../../src/queue/fetch-queue.ts'
import {
  FetchFailureError,
  fetchProcessor,
  type FetchFunction,
} from '../../src/queue/fetch-worker.ts'
import { RedisClock } from '../../src/queue/redis-clock.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { startFetchWorkers } from '../../src/adapter/workers.ts'
import { dumpKeyspace } from '../support/keyspace.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { deleteKeys } from './support.ts'

/** Prefixes this file used; their keys are removed from the shared Redis at the end. */
const usedPrefixes: string[] = []
afterAll(async () => {
  for (const prefix of usedPrefixes) await deleteKeys(testRedisUrl(), `${prefix}:*`)
})

/** A fetch function whose behaviour each test sets, counting calls per endpoint. */
function scriptedFetch() {
  const calls = new Map<string, number>()
  let behaviour: FetchFunction = async (data) => ({
    status: 200,
    result: 'success',
    data: { echo: data.params },
  })
  const fetch: FetchFunction = async (data, context) => {
    calls.set(data.endpoint, (calls.get(data.endpoint) ?? 0) + 1)
    return behaviour(data, context)
  }
  return {
    fetch,
    calls: (endpoint: string) => calls.get(endpoint) ?? 0,
    set(next: FetchFunction) {
      behaviour = next
    },
  }
}

function settingsFor(redisUrl: string, extra: Record<string, string> = {}): Settings {
  const prefix = uniquePrefix('queue').replace(/:/g, '.')
  if (redisUrl === testRedisUrl()) usedPrefixes.push(prefix)
  return parseSettings({
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    FETCH_BACKOFF_MS: '20',
    FETCH_ATTEMPTS: '3',
    ...extra,
  })
}

describe('fetch queues on real Redis', () => {
  let settings: Settings
  let workerConnection: Redis
  let worker: FetchWorker
  let clock: RedisClock
  let clientA: FetchQueueClient
  let clientB: FetchQueueClient
  const script = scriptedFetch()

  beforeAll(async () => {
    settings = settingsFor(testRedisUrl(), { CACHE_TTL_SPORTS_MS: '1500' })
    workerConnection = createRedisConnection(settings.REDIS_URL, 'worker')
    clock = new RedisClock(workerConnection, { slotKey: `${settings.QUEUE_PREFIX}:clock` })
    // Read before the first job finishes: an outcome without a finish time is never shared.
    expect(await clock.sync()).toBe(true)
    worker = createFetchWorker(
      settings,
      'sports',
      workerConnection,
      fetchProcessor('sports', script.fetch, (text) => text, clock),
    )
    clientA = FetchQueueClient.open(settings)
    clientB = FetchQueueClient.open(settings)
    await Promise.all([clientA.waitUntilReady(), clientB.waitUntilReady(), worker.waitUntilReady()])
  })

  afterAll(async () => {
    await Promise.all([clientA?.close(), clientB?.close()])
    await worker?.close()
    workerConnection?.disconnect()
  })

  it('gives equal concurrent requests from two clients one fetch', async () => {
    script.set(async (data) => {
      await new Promise((resolve) => setTimeout(resolve, 100))
      return { status: 200, result: 'success', data: { echo: data.params } }
    })
    const data = { endpoint: 'coalesce', params: { homeTeam: 'Fulham', date: '2024-08-16' } }
    const reordered = { endpoint: 'coalesce', params: { date: '2024-08-16', homeTeam: 'Fulham' } }
    expect(fetchJobId(data)).toBe(fetchJobId(reordered))
    const outcomes = await Promise.all([
      ...Array.from({ length: 20 }, () => clientA.fetch('sports', data, 5_000)),
      ...Array.from({ length: 20 }, () => clientB.fetch('sports', reordered, 5_000)),
    ])
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true)
    expect(script.calls('coalesce')).toBe(1)
    // Joined while fresh: still one call.
    const again = await clientB.fetch('sports', data, 5_000)
    expect(again.ok && again.envelope.data).toEqual({ echo: data.params })
    expect(script.calls('coalesce')).toBe(1)
  })

  it('fetches again once the kept job is older than the family cache TTL', async () => {
    script.set(async () => ({ status: 200, result: 'success', data: { n: script.calls('stale') } }))
    const data = { endpoint: 'stale', params: { a: '1' } }
    const first = await clientA.fetch('sports', data, 5_000)
    expect(first.ok && first.envelope.data).toEqual({ n: 1 })
    await new Promise((resolve) => setTimeout(resolve, 1_600))
    const second = await clientA.fetch('sports', data, 5_000)
    expect(second.ok && second.envelope.data).toEqual({ n: 2 })
    expect(script.calls('stale')).toBe(2)
  })

  it('retries a retryable failure and succeeds', async () => {
    script.set(async (_data, context) => {
      if (context.attempt < 3)
        throw new FetchFailureError({
          kind: 'upstream',
          providerStatus: 500,
          message: 'boom',
          retryable: true,
        })
      return { status: 200, result: 'success', data: { attempt: context.attempt } }
    })
    const outcome = await clientA.fetch('sports', { endpoint: 'flaky', params: {} }, 5_000)
    expect(outcome.ok && outcome.envelope.data).toEqual({ attempt: 3 })
    expect(script.calls('flaky')).toBe(3)
  })

  it('does not retry an unrecoverable failure and reports it with its words', async () => {
    script.set(async () => {
      throw new FetchFailureError({
        kind: 'upstream',
        providerStatus: 401,
        message: 'invalid key',
        retryable: false,
      })
    })
    const outcome = await clientA.fetch('sports', { endpoint: 'denied', params: {} }, 5_000)
    expect(outcome).toMatchObject({
      ok: false,
      failure: { kind: 'upstream', providerStatus: 401, message: 'invalid key', attempts: 1 },
    })
    expect(script.calls('denied')).toBe(1)
  })

  it('reports exhausted retries with the number of attempts', async () => {
    script.set(async () => {
      throw new FetchFailureError({
        kind: 'upstream',
        providerStatus: 503,
        message: 'down for maintenance',
        retryable: true,
      })
    })
    const outcome = await clientA.fetch('sports', { endpoint: 'down', params: {} }, 5_000)
    expect(outcome).toMatchObject({
      ok: false,
      failure: { providerStatus: 503, retryable: true, attempts: 3 },
    })
    expect(script.calls('down')).toBe(3)
  })

  it('times out saying what it waited for', async () => {
    const lonely = settingsFor(testRedisUrl())
    const client = FetchQueueClient.open(lonely)
    try {
      await client.waitUntilReady()
      const started = Date.now()
      const error = await client
        .fetch('weather', { endpoint: 'nobody', params: {} }, 300)
        .catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(FetchWaitTimeoutError)
      expect(Date.now() - started).toBeLessThan(30_000) // nobody takes the job: a hang catcher
      expect((error as Error).message).toMatch(
        /300 ms waiting for the weather fetch .* no fetch worker has taken the job/,
      )
    } finally {
      await client.close()
    }
  })
})

describe("a fetch that fails with the feed key in its words, not the feed service's", () => {
  it('leaves the key in no failed job and no outcome: the fetch workers scrub what goes back into Redis', async () => {
    const key = 'queue-scrub-key-4f1e9a'
    const settings = settingsFor(testRedisUrl(), {
      FEED_API_KEY: key,
      SPORTS_URL: 'http://127.0.0.1:9',
    })
    // A bug's error (not a FetchFailureError the feeds client made, whose words it scrubbed itself),
    // for good and retryable, both carrying the key.
    const workers = await startFetchWorkers({
      settings,
      families: ['sports'],
      fetch: async (data) => {
        if (data.endpoint === 'for-good') throw new TypeError(`cannot read ${key} of undefined`)
        throw new FetchFailureError({
          kind: 'unavailable',
          message: `connection reset after sending key=${key}`,
          retryable: true,
        })
      },
    })
    const client = FetchQueueClient.open(settings)
    try {
      await client.waitUntilReady()
      const outcomes = [
        await client.fetch('sports', { endpoint: 'for-good', params: {} }, 10_000),
        await client.fetch('sports', { endpoint: 'retried', params: {} }, 10_000),
      ]
      expect(outcomes.map((outcome) => outcome.ok)).toEqual([false, false])
      expect(JSON.stringify(outcomes)).not.toContain(key)
      const redis = await dumpKeyspace(testRedisUrl(), settings.QUEUE_PREFIX)
      expect(redis).toContain('failedReason')
      expect(redis).not.toContain(key)
    } finally {
      await client.close()
      await workers.close()
    }
  })
})

describe('fetch queues while Redis is away', () => {
  let redis: PrivateRedis
  let client: FetchQueueClient

  beforeAll(async () => {
    redis = await startPrivateRedis()
  })
  afterAll(async () => {
    await client?.close()
    await redis?.stop()
  })

  it('fails fast with QueueUnavailableError, then works again after a restart', async () => {
    const settings = settingsFor(redis.url)
    client = FetchQueueClient.open(settings)
    await client.waitUntilReady()
    await redis.stop()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const started = Date.now()
    const error = await client
      .fetch('nft', { endpoint: 'x', params: {} }, 5_000)
      .catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(QueueUnavailableError)
    // Fast is before the 5 s fetch timeout: a loaded machine can take more than a few ms to say so.
    expect(Date.now() - started).toBeLessThan(2_500)

    redis = await startPrivateRedis({ port: redis.port })
    const connection = createRedisConnection(redis.url, 'worker')
    const worker = createFetchWorker(
      settings,
      'nft',
      connection,
      fetchProcessor(
        'nft',
        async () => ({ status: 200, result: 'success', data: { back: true } }),
        (text) => text,
        // Stamped, so a finish whose event the client missed while it reconnected is still read.
        { now: () => Date.now() },
      ),
    )
    try {
      const deadline = Date.now() + 30_000
      while (!client.connected && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50))
      // A bound that only catches a hang: a loaded machine may take seconds to reconnect.
      const outcome = await client.fetch('nft', { endpoint: 'x', params: {} }, 30_000)
      expect(outcome.ok && outcome.envelope.data).toEqual({ back: true })
    } finally {
      await worker.close()
      connection.disconnect()
    }
  })
})
