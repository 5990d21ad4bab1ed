import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { TxStore, type TxAttempt } from '../../src/chain/sender/tx-store.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const attempt = (hash: string): TxAttempt => ({
  hash,
  raw: '0x02',
  maxFeePerGas: '2',
  maxPriorityFeePerGas: '1',
})

describe('transaction store', () => {
  const redis = new Redis(testRedisUrl())
  const base = uniquePrefix('txstore')
  const store = new TxStore(redis, base, 3_600)

  afterAll(async () => {
    const keys = await redis.keys(`${base}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it('keeps every job record it writes under an expiry, with or without an allocation first', async () => {
    const nonce = await store.allocateNonce('job-a', 7, { to: '0x01' })
    expect(nonce).toBe(7)
    expect(await store.load('job-a')).toEqual({ nonce: 7, attempts: [], tx: { to: '0x01' } })
    await store.addAttempt('job-a', [attempt('0xa1')])
    await store.addAttempt('job-a', [attempt('0xa1'), attempt('0xa2')])
    expect((await store.load('job-a')).attempts.map((stored) => stored.hash)).toEqual([
      '0xa1',
      '0xa2',
    ])
    const allocatedTtl = await redis.ttl(`${base}:job:job-a`)
    expect(allocatedTtl).toBeGreaterThan(0)
    expect(allocatedTtl).toBeLessThanOrEqual(3_600)
    // A record the allocation did not make (gone meanwhile) gets its expiry from the attempt.
    await store.addAttempt('job-b', [attempt('0xb1')])
    const ttl = await redis.ttl(`${base}:job:job-b`)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(3_600)
  })
  it('without a counter and without a fallback allocates nothing (Redis lost its state)', async () => {
    const lost = new TxStore(redis, `${base}:lost`, 3_600)
    expect(await lost.allocateNonce('job-c', undefined)).toBeUndefined()
    expect(await lost.load('job-c')).toEqual({ nonce: undefined, attempts: [] })
    expect(await lost.inflight()).toEqual([])
    expect(await lost.allocateNonce('job-c', 42)).toBe(42)
    expect(await lost.allocateNonce('job-d', undefined)).toBe(43)
  })
})
