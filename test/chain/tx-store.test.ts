import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { TxStore, type FirstAttempt, type TxAttempt } from '../../src/chain/sender/tx-store.ts'
import { ownerKey } from '../../src/chain/sender/ownership/key-leases.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const KEY = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const OTHER_KEY = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'

const attempt = (hash: string): TxAttempt => ({
  hash,
  raw: '0x02',
  maxFeePerGas: '2',
  maxPriorityFeePerGas: '1',
})
const job = (jobId: string, nonce: number): FirstAttempt => ({
  jobId,
  nonce,
  attempt: attempt(`0x${jobId}`),
  tx: { to: '0x0000000000000000000000000000000000000001', data: '0x', gasLimit: 500_000 },
})

describe('transaction store: every write that hands out a nonce or puts bytes on their way is fenced', () => {
  const redis = new Redis(testRedisUrl())
  const base = uniquePrefix('txstore')
  const store = new TxStore(redis, base, 3_600)
  const own = async (address: string, fence: string) =>
    redis.set(ownerKey(base, address), fence, 'PX', 60_000)

  afterAll(async () => {
    const keys = await redis.keys(`${base}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it('records a batch only under the fence that owns the key, each job under an expiry, and moves the next nonce past it', async () => {
    await own(KEY, 'p1:1')
    expect(await store.recordFirstAttempts(KEY, 'p0:9', [job('a', 7)])).toBe('not-owner')
    expect(await store.load('a')).toBeUndefined()
    expect(await store.recordFirstAttempts(KEY, 'p1:1', [job('a', 7), job('b', 8)])).toEqual([
      'recorded',
      'recorded',
    ])
    expect(await store.load('a')).toMatchObject({
      from: KEY.toLowerCase(),
      nonce: 7,
      attempts: [attempt('0xa')],
    })
    expect(await store.nextNonce(KEY)).toBe(9)
    expect(await store.inflight(KEY)).toEqual([
      { jobId: 'a', nonce: 7 },
      { jobId: 'b', nonce: 8 },
    ])
    const ttl = await redis.ttl(`${base}:job:a`)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(3_600)
  })

  it('stops a batch at the first job bound already (an earlier run sent it): the jobs after it are not recorded', async () => {
    await own(OTHER_KEY, 'p2:1')
    // Job `a` is bound to KEY: another key's owner cannot send it again.
    expect(
      await store.recordFirstAttempts(OTHER_KEY, 'p2:1', [job('c', 0), job('a', 1), job('d', 2)]),
    ).toEqual(['recorded', 'exists'])
    expect(await store.load('d')).toBeUndefined()
    expect(await store.nextNonce(OTHER_KEY)).toBe(1)
    expect((await store.load('a'))?.from).toBe(KEY.toLowerCase())
  })

  it('never steps the next nonce back, and syncs it only under the owning fence', async () => {
    expect(await store.syncNonce(KEY, 'p1:1', 3)).toBe(9)
    expect(await store.syncNonce(KEY, 'p1:1', 12)).toBe(12)
    expect(await store.syncNonce(KEY, 'p0:9', 20)).toBeUndefined()
    expect(await store.nextNonce(KEY)).toBe(12)
  })

  it('keeps a final result with the record and takes the job out of the in-flight index', async () => {
    await store.settle(KEY, { jobId: 'a', nonce: 7 }, { status: 'mined', txHash: '0xa', nonce: 7 })
    expect((await store.load('a'))?.result).toEqual({ status: 'mined', txHash: '0xa', nonce: 7 })
    expect(await store.inflight(KEY)).toEqual([{ jobId: 'b', nonce: 8 }])
    // A record Redis lost is not made again by its settlement.
    await store.settle(KEY, { jobId: 'gone', nonce: 3 }, { status: 'mined' })
    expect(await redis.exists(`${base}:job:gone`)).toBe(0)
  })

  it('gives a nonce to a filler only from its holder at that nonce, under the fence', async () => {
    const claim = { fillerId: 'filler-8', nonce: 8, holderJobId: 'b' }
    expect(await store.claimForFiller(KEY, 'p0:9', claim)).toBe(false)
    expect(await store.claimForFiller(KEY, 'p1:1', { ...claim, nonce: 9 })).toBe(false)
    expect(await store.claimForFiller(KEY, 'p1:1', claim)).toBe(true)
    expect(await store.load('b')).toBeUndefined()
    expect(await store.inflight(KEY)).toEqual([{ jobId: 'filler-8', nonce: 8 }])
    const filler = { jobId: 'filler-8', nonce: 8 }
    expect(await store.storeAttempts(KEY, 'p1:1', filler, [attempt('0xf8')])).toBe(true)
    expect(await store.storeAttempts(KEY, 'p0:9', filler, [attempt('0xf9')])).toBe(false)
    expect((await store.load('filler-8'))?.attempts).toEqual([attempt('0xf8')])
  })

  it("leaves a job's record alone once Redis binds it to another key: a run sent it again after Redis lost the first record", async () => {
    // KEY sent job `e` at nonce 12; Redis lost the record; a run of the job went out from OTHER_KEY.
    expect(await store.recordFirstAttempts(KEY, 'p1:1', [job('e', 12)])).toEqual(['recorded'])
    await redis.del(`${base}:job:e`)
    expect(await store.recordFirstAttempts(OTHER_KEY, 'p2:1', [job('e', 1)])).toEqual(['recorded'])
    const bound = await store.load('e')
    const byKey = { jobId: 'e', nonce: 12 }

    // KEY's owner settles, reorgs, bumps, forgets and fills its own transaction: none of it lands.
    await store.settle(
      KEY,
      byKey,
      { status: 'mined', txHash: '0xkey' },
      {
        minedIn: 40,
        head: 40,
        finalityDepth: 10,
      },
    )
    expect(await store.inflight(KEY)).toEqual([{ jobId: 'filler-8', nonce: 8 }])
    expect(await store.mined(KEY)).toEqual([])
    await store.unsettle(KEY, byKey)
    expect(await store.inflight(KEY)).toEqual([{ jobId: 'filler-8', nonce: 8 }])
    expect(await store.storeAttempts(KEY, 'p1:1', byKey, [attempt('0xbump')])).toBe(false)
    await store.forget(KEY, byKey)
    expect(await store.load('e')).toEqual(bound)
    expect(await store.loadBound(KEY, 'e')).toBeUndefined()
    expect(await store.loadBound(OTHER_KEY, 'e', 12)).toBeUndefined()
    expect(await store.loadBound(OTHER_KEY, 'e', 1)).toEqual(bound)

    // Its nonce, held in KEY's index by the job, goes to a filler; the other key's record stays.
    await redis.zadd(`${base}:${KEY.toLowerCase()}:inflight`, 12, 'e')
    const claim = { fillerId: 'filler-12', nonce: 12, holderJobId: 'e' }
    expect(await store.claimForFiller(KEY, 'p1:1', claim)).toBe(true)
    expect(await store.load('e')).toEqual(bound)

    // The other key's owner settles it as its own.
    await store.settle(OTHER_KEY, { jobId: 'e', nonce: 1 }, { status: 'reverted', txHash: '0xo' })
    expect((await store.load('e'))?.result).toEqual({ status: 'reverted', txHash: '0xo' })
  })

  it('records nothing of a batch signed at nonces the key handed out since: a script that arrived late', async () => {
    await own(KEY, 'p1:1')
    // The owner's batch (f, h) lost its answer (Redis away), the owner resynced and recorded job g
    // at the same nonce, then the client sent the first script again: that nonce is g's alone.
    const next = (await store.nextNonce(KEY))!
    expect(await store.recordFirstAttempts(KEY, 'p1:1', [job('g', next)])).toEqual(['recorded'])
    expect(await store.recordFirstAttempts(KEY, 'p1:1', [job('f', next), job('h', next + 1)])).toBe(
      'behind',
    )
    expect(await store.load('f')).toBeUndefined()
    expect(await store.load('h')).toBeUndefined()
    expect((await store.inflight(KEY)).filter((entry) => entry.nonce >= next)).toEqual([
      { jobId: 'g', nonce: next },
    ])
    expect(await store.nextNonce(KEY)).toBe(next + 1)
  })
})
