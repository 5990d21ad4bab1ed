import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import type { OracleRequestEvent } from '../../src/chain/operator.ts'
import { FeedrunnerError } from '../../src/config/errors.ts'
import { waitFor } from '../../src/dev/process.ts'
import { DirectRuns, type DirectRun } from '../../src/runner/direct/direct-runs.ts'
import { LeaseStore, leaseKeys } from '../../src/runner/direct/lease-store.ts'
import { requestJobId } from '../../src/runner/request-payload.ts'
import { readStatus } from '../../src/runner/status.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const CHAIN = 31337
const log = pino({ level: 'silent' })

function request(n: number): OracleRequestEvent {
  const id = `0x${n.toString(16).padStart(64, '0')}`
  return {
    kind: 'request',
    chainId: CHAIN,
    operator: '0x' + 'ab'.repeat(20),
    blockNumber: n,
    blockHash: id,
    txHash: id,
    logIndex: 0,
    topics: [id],
    logData: '0x',
    specId: id,
    requester: '0x' + 'cd'.repeat(20),
    requestId: id,
    payment: 1n,
    callbackAddr: '0x' + 'ef'.repeat(20),
    callbackFunctionId: '0x12345678',
    cancelExpiration: 99n,
    dataVersion: 1n,
    data: '0x',
  }
}

const jobIdOf = (n: number) => {
  const event = request(n)
  return requestJobId(event.chainId, event.operator, event.requestId)
}

describe('lease store', () => {
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('leases')
  const store = new LeaseStore(redis, prefix, CHAIN)

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it('keeps both keys in the prefix hash tag', () => {
    const keys = leaseKeys('{feedrunner}', 7)
    expect(keys).toEqual([
      '{feedrunner}:runner:direct:7:leases',
      '{feedrunner}:runner:direct:7:held',
    ])
  })

  it('claims once: a second claim of a held request is refused', async () => {
    const far = Date.now() + 60_000
    expect(await store.claim('a', 'p1:1', far, '{"x":1}')).toBe(true)
    expect(await store.claim('a', 'p2:1', far, '{"x":1}')).toBe(false)
    expect(await store.counts()).toEqual({ held: 1, waiting: 0 })
  })

  it('renews only its own leases, in one call, and names the others', async () => {
    const soon = Date.now() + 1_000
    await store.claim('r1', 'p1:2', soon, '{}')
    await store.claim('r2', 'p2:2', soon, '{}')
    const later = Date.now() + 120_000
    const lost = await store.renew(
      [
        { jobId: 'r1', token: 'p1:2' },
        { jobId: 'r2', token: 'p1:3' },
        { jobId: 'gone', token: 'p1:4' },
      ],
      later,
    )
    expect(lost.sort()).toEqual(['gone', 'r2'])
    expect(Number(await redis.zscore(leaseKeys(prefix, CHAIN)[0], 'r1'))).toBe(later)
    // Not recreated: a lease Redis lost is delivered again by recovery, not revived by its old holder.
    expect(await redis.zscore(leaseKeys(prefix, CHAIN)[0], 'gone')).toBeNull()
  })

  it('takes over an expired lease with its payload, as stalled, and nothing that is live', async () => {
    const past = Date.now() - 1
    await store.claim('dead', 'p9:1', past, '{"request":"dead"}')
    const now = Date.now()
    const taken = await store.take(now, 'p3:s1', now + 60_000, 10)
    expect(taken).toEqual([
      {
        jobId: 'dead',
        token: 'p3:s1#1',
        attemptsMade: 0,
        payload: '{"request":"dead"}',
        stalled: true,
      },
    ])
    expect(await store.anyDue(Date.now())).toBe(false)
    // The old holder's end changes nothing: the lease is the new holder's.
    expect(await store.finish('dead', 'p9:1')).toBe(false)
    expect(await store.finish('dead', 'p3:s1#1')).toBe(true)
  })

  it('puts a run back for a later try, also when its lease vanished, not when another holds it', async () => {
    await store.claim('retry', 'p1:5', Date.now() + 60_000, '{"r":1}')
    const notBefore = Date.now() + 200
    expect(
      await store.putBack({ jobId: 'retry', token: 'p1:5', payload: '{"r":1}' }, notBefore, 1),
    ).toBe(true)
    expect(await store.counts()).toMatchObject({ waiting: 1 })
    expect(await store.take(Date.now(), 'p4:s1', Date.now() + 60_000, 10)).toEqual([])
    await waitFor('the retry due', async () => store.anyDue(Date.now()), 10_000, 20)
    const [taken] = await store.take(Date.now(), 'p4:s2', Date.now() + 60_000, 10)
    expect(taken).toMatchObject({
      jobId: 'retry',
      attemptsMade: 1,
      stalled: false,
      payload: '{"r":1}',
    })
    // Another process holds it now: the old token cannot put it back.
    expect(await store.putBack({ jobId: 'retry', token: 'p1:5', payload: '{}' }, 0, 2)).toBe(false)
    // Gone altogether (Redis lost it while the run went on): put back all the same.
    expect(
      await store.putBack({ jobId: 'vanished', token: 'p1:6', payload: '{"v":1}' }, 0, 1),
    ).toBe(true)
    const [back] = await store.take(Date.now(), 'p4:s3', Date.now() + 60_000, 10)
    expect(back).toMatchObject({ jobId: 'vanished', attemptsMade: 1, payload: '{"v":1}' })
  })

  it('shows in `status` next to the queues: held, and waiting for another try', async () => {
    const statusPrefix = uniquePrefix('leases-status')
    const own = new LeaseStore(redis, statusPrefix, CHAIN)
    await own.claim('s1', 'p1:1', Date.now() + 60_000, '{}')
    await own.claim('s2', 'p1:2', Date.now() + 60_000, '{}')
    await own.putBack({ jobId: 's2', token: 'p1:2', payload: '{}' }, Date.now() + 60_000, 1)
    const { queues } = await readStatus(redis, statusPrefix)
    expect(queues.find((queue) => queue.queue === `requests-${CHAIN}-held`)).toEqual({
      queue: `requests-${CHAIN}-held`,
      waiting: 0,
      active: 1,
      delayed: 1,
      failed: 0,
      completed: 0,
    })
    await redis.del(...leaseKeys(statusPrefix, CHAIN))
  })

  it('shows the held row of a chain with a requests queue when nothing is held', async () => {
    const statusPrefix = uniquePrefix('leases-status-empty')
    const queue = new Queue(`requests-${CHAIN}`, { connection: redis, prefix: statusPrefix })
    await queue.add('request', {}, { jobId: 'one' })
    const { queues } = await readStatus(redis, statusPrefix)
    expect(queues.map((row) => row.queue)).toContain(`requests-${CHAIN}`)
    expect(queues.find((row) => row.queue === `requests-${CHAIN}-held`)).toEqual({
      queue: `requests-${CHAIN}-held`,
      waiting: 0,
      active: 0,
      delayed: 0,
      failed: 0,
      completed: 0,
    })
    await queue.obliterate({ force: true })
    await queue.close()
  })

  it('drops a waiting run (a cancel), never a held one', async () => {
    await store.claim('c1', 'p1:7', Date.now() + 60_000, '{}')
    expect(await store.dropWaiting('c1')).toBe(false)
    await store.putBack({ jobId: 'c1', token: 'p1:7', payload: '{}' }, Date.now() + 60_000, 1)
    expect(await store.dropWaiting('c1')).toBe(true)
    expect(await redis.hexists(leaseKeys(prefix, CHAIN)[1], 'c1')).toBe(0)
  })
})

describe('direct runs', () => {
  const redis = new Redis(testRedisUrl())
  const prefixes: string[] = []
  const open: DirectRuns[] = []

  afterAll(async () => {
    for (const runs of open) await runs.close()
    for (const prefix of prefixes) {
      const keys = await redis.keys(`${prefix}:*`)
      if (keys.length) await redis.del(...keys)
    }
    redis.disconnect()
  })

  function directRuns(
    prefix: string,
    run: DirectRun,
    extra: { leaseMs?: number; concurrency?: number } = {},
  ) {
    const runs = new DirectRuns({
      store: new LeaseStore(redis, prefix, CHAIN),
      leaseMs: extra.leaseMs ?? 30_000,
      concurrency: () => extra.concurrency ?? 4,
      heldPerSlot: 2,
      attempts: 3,
      backoffMs: 50,
      sweepMs: 100,
      run,
      jobName: () => 'test job',
      log,
    })
    open.push(runs)
    runs.start()
    return runs
  }

  function freshPrefix(label: string): string {
    const prefix = uniquePrefix(label)
    prefixes.push(prefix)
    return prefix
  }

  it('runs a claimed request once, here; a second claim anywhere is refused; the lease goes at the end', async () => {
    const prefix = freshPrefix('direct-once')
    const ran: string[] = []
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    const a = directRuns(prefix, async (event) => {
      ran.push(event.requestId)
      await gate
    })
    const b = directRuns(prefix, async (event) => void ran.push(event.requestId))
    expect(await a.claim(request(1))).toBe('claimed')
    expect(await b.claim(request(1))).toBe('elsewhere')
    release()
    await waitFor('the run', async () => ran.length === 1, 10_000, 10)
    await waitFor(
      'the lease gone',
      async () => (await redis.zcard(leaseKeys(prefix, CHAIN)[0])) === 0,
      10_000,
      10,
    )
    expect(ran).toEqual([request(1).requestId])
  })

  it('bounds runs at once by the concurrency, and answers full past its held bound', async () => {
    const prefix = freshPrefix('direct-bound')
    let running = 0
    let most = 0
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    const runs = directRuns(
      prefix,
      async () => {
        most = Math.max(most, ++running)
        await gate
        running--
      },
      { concurrency: 2 },
    )
    const outcomes = []
    for (let n = 10; n < 15; n++) outcomes.push(await runs.claim(request(n)))
    // Two slots, two leases a slot: the fifth goes to the queue.
    expect(outcomes).toEqual(['claimed', 'claimed', 'claimed', 'claimed', 'full'])
    await waitFor('two running', async () => running === 2, 10_000, 10)
    expect(runs.stats()).toMatchObject({ running: 2, waiting: 2 })
    release()
    await waitFor(
      'all ended',
      async () => runs.stats().running + runs.stats().waiting === 0,
      10_000,
      10,
    )
    expect(most).toBe(2)
  })

  it('tries a retryable failure again after its backoff, with retryTransient off on the last try', async () => {
    const prefix = freshPrefix('direct-retry')
    const deliveries: Array<{ retryTransient: boolean; retried: boolean }> = []
    const runs = directRuns(prefix, async (_event, delivery) => {
      deliveries.push(delivery)
      if (delivery.retryTransient) throw new FeedrunnerError('bridge away', { kind: 'unavailable' })
    })
    expect(await runs.claim(request(20))).toBe('claimed')
    await waitFor('three deliveries', async () => deliveries.length === 3, 20_000, 10)
    expect(deliveries).toEqual([
      { retryTransient: true, retried: false },
      { retryTransient: true, retried: true },
      { retryTransient: false, retried: true },
    ])
    await waitFor(
      'the lease gone',
      async () => (await redis.zcard(leaseKeys(prefix, CHAIN)[0])) === 0,
      10_000,
      10,
    )
  })

  it("takes over a dead process's lease once it expires, as a retried run", async () => {
    const prefix = freshPrefix('direct-takeover')
    const store = new LeaseStore(redis, prefix, CHAIN)
    // A process that claimed and died: its lease expires in 300 ms and nobody renews it.
    const payload = JSON.stringify({
      ...request(30),
      payment: '1',
      cancelExpiration: '99',
      dataVersion: '1',
    })
    await store.claim(jobIdOf(30), 'dead:1', Date.now() + 300, payload)
    const deliveries: Array<{ id: string; retried: boolean }> = []
    directRuns(prefix, async (event, delivery) => {
      deliveries.push({ id: event.requestId, retried: delivery.retried })
    })
    await waitFor('the take-over', async () => deliveries.length === 1, 15_000, 20)
    expect(deliveries).toEqual([{ id: request(30).requestId, retried: true }])
  })

  it('keeps its leases alive by renewing them while a run lasts longer than the lease', async () => {
    const prefix = freshPrefix('direct-renew')
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    let deliveries = 0
    const holder = directRuns(
      prefix,
      async () => {
        deliveries++
        await gate
      },
      { leaseMs: 600 },
    )
    const other = directRuns(prefix, async () => void deliveries++, { leaseMs: 600 })
    expect(await holder.claim(request(40))).toBe('claimed')
    // Three lease durations: the other process sweeps all along and finds nothing due.
    await new Promise((resolve) => setTimeout(resolve, 1_800))
    expect(await other.sweep()).toBe(0)
    release()
    await waitFor(
      'the lease gone',
      async () => (await redis.zcard(leaseKeys(prefix, CHAIN)[0])) === 0,
      10_000,
      10,
    )
    expect(deliveries).toBe(1)
  })

  it('hands back the leases it has not started on close, for another process to take at once', async () => {
    const prefix = freshPrefix('direct-handback')
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    const ranBy: string[] = []
    const closing = directRuns(
      prefix,
      async () => {
        ranBy.push('closing')
        await gate
      },
      { concurrency: 1 },
    )
    for (let n = 50; n < 52; n++) expect(await closing.claim(request(n))).toBe('claimed')
    await waitFor('one running', async () => ranBy.length === 1, 10_000, 10)
    const closed = closing.close()
    const other = directRuns(prefix, async () => void ranBy.push('other'))
    await waitFor('the one handed back run elsewhere', async () => ranBy.length === 2, 10_000, 10)
    release()
    await closed
    expect(ranBy).toEqual(['closing', 'other'])
    await other.close()
  })

  it('a cancel drops a run not started and a run waiting for its retry', async () => {
    const prefix = freshPrefix('direct-cancel')
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    const ran: string[] = []
    const runs = directRuns(
      prefix,
      async (event) => {
        ran.push(event.requestId)
        await gate
      },
      { concurrency: 1 },
    )
    await runs.claim(request(60))
    await runs.claim(request(61))
    await runs.cancel(jobIdOf(61))
    const store = new LeaseStore(redis, prefix, CHAIN)
    await store.putBack({ jobId: 'waiting', token: 'x', payload: '{}' }, Date.now() + 60_000, 1)
    await runs.cancel('waiting')
    expect(await store.counts()).toEqual({ held: 1, waiting: 0 })
    release()
    await waitFor('the lease gone', async () => (await store.counts()).held === 0, 10_000, 10)
    expect(ran).toEqual([request(60).requestId])
  })
})
