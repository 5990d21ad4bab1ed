import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FEED_FAMILIES } from '../../src/config/settings-declared.ts'
import { waitFor } from '../../src/dev/process.ts'
import { fetchQueueName } from '../../src/queue/names.ts'
import { REQUESTS_QUEUE } from '../../src/runner/requests-queue.ts'
import { buildDemoCases, runDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { scanKeys } from '../../src/queue/scan-keys.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

/** The fetch queues' names, from the settings' list of families (the catalog's). */
const FETCH_QUEUE = `(${FEED_FAMILIES.map(fetchQueueName).join('|')})`
const HEX = '0x[0-9a-fA-F]+'

/**
 * The keys an installation keeps with no expiry, each with what bounds it. A key of its own per
 * request, per run or per fetch must expire or be one of these; a new one is a key that grows with
 * every month an operator runs feedrunner, until it is given an expiry or a bound and a line here.
 */
const KEPT_WITHOUT_EXPIRY: ReadonlyArray<{ key: RegExp; bound: string }> = [
  {
    key: new RegExp(
      `^${FETCH_QUEUE}:(completed|failed|events|id|meta|wait|active|paused|prioritized|delayed|marker|limiter|pc|stalled)$`,
    ),
    bound:
      "BullMQ's structures of a fetch queue: finished jobs by removeOnComplete/removeOnFail (age and count), events by the stream's maxLen",
  },
  {
    key: new RegExp(`^${FETCH_QUEUE}:[a-z-]+-[0-9a-f]+$`),
    bound:
      "a fetch job: kept for its family's cache TTL, then removed by BullMQ when another finishes and by the fetch workers' sweep (src/queue/fetch-sweep.ts); MAX_KEPT_JOBS at most",
  },
  {
    key: new RegExp(
      `^${REQUESTS_QUEUE}(-\\d+)?:(events|id|meta|wait|active|paused|prioritized|delayed|marker|pc|stalled|failed)$`,
    ),
    bound:
      "BullMQ's structures of a chain's requests queue: a finished job is removed at once (removeOnComplete), a failed one after 7 days",
  },
  {
    key: /^generation$/,
    bound: 'one key: the Redis generation (src/runner/recovery/generation.ts)',
  },
  {
    key: /^listener:listener:\d+:[a-z-]+:checkpoint$/,
    bound: 'one key per listener: the last block it read (src/chain/listener/checkpoint.ts)',
  },
  {
    key: /^runner:runs$/,
    bound:
      'the index of recent runs, trimmed to the runs kept by one creation in 64 (update-run.lua)',
  },
  {
    key: new RegExp(`^txstate:\\d+:${HEX}:(nonce|owner:epoch)$`),
    bound: "one key per sender key: its next nonce, its lease's epoch",
  },
  {
    key: new RegExp(`^txstate:\\d+:${HEX}:(inflight|mined)$`),
    bound:
      "a sender key's transactions in flight (left once final) and mined ones a reorg could take away (left below CHAIN_FINALITY_DEPTH)",
  },
]

/**
 * Redis across an operator's months: after a demo of every job (requester limits on, so their keys
 * are made too), each key under the installation's prefix either expires or is one of the kinds kept
 * with a bound (KEPT_WITHOUT_EXPIRY). `test/chain/tx-store.test.ts` and the sweep's tests hold the
 * bounds themselves.
 */
describe('Redis keys an installation keeps', () => {
  const prefix = uniquePrefix('key-census')
  let stack: DevStack
  let cases: DemoCase[]
  const redis = new Redis(testRedisUrl())

  beforeAll(async () => {
    stack = await startDevStack({
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        LOG_LEVEL: 'warn',
        EA_PORT: '',
        REQUESTER_MAX_CONCURRENT_RUNS: '50',
        REQUESTER_MAX_REQUESTS_PER_MINUTE: '500',
      },
      prefix,
    })
    cases = await buildDemoCases(stack, stack.runner!.registry.jobs)
  }, 120_000)

  afterAll(async () => {
    await stack?.stop()
    redis.disconnect()
  })

  it('expire, or are of a kind kept with a bound', async () => {
    const results = await runDemoCases(stack, cases, 120_000)
    expect(results.filter((result) => !result.ok).map((result) => result.job.name)).toEqual([])
    // A request's job goes once its fulfilment is mined and settled, a moment after the demo saw it.
    const jobsLeft = async () =>
      (await scanKeys(redis, `${prefix}:requests-*`)).filter((key) => /:\d+-0x/.test(key))
    await waitFor('the requests jobs finished', async () => (await jobsLeft()).length === 0, 60_000)
    const unbounded: string[] = []
    let expiring = 0
    for (const key of await scanKeys(redis, `${prefix}:*`)) {
      const name = key.slice(prefix.length + 1)
      const ttl = await redis.pttl(key)
      // -2: the key expired between the scan and this read (BullMQ's stalled-check lives a few s).
      if (ttl === -2) continue
      if (ttl >= 0) expiring += 1
      else if (name !== 'dev-stack' && !KEPT_WITHOUT_EXPIRY.some(({ key }) => key.test(name)))
        unbounded.push(name)
    }
    expect(unbounded).toEqual([])
    // The run records, consumed markers and transaction records of the demo: they expire.
    expect(expiring).toBeGreaterThanOrEqual(cases.length * 3)
  }, 300_000)
})
