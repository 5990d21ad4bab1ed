import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { SigningLine } from '../../src/chain/sender/ordered-signing.ts'
import { ownerKey } from '../../src/chain/sender/ownership/key-leases.ts'
import { TxStore } from '../../src/chain/sender/tx-store.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const KEY = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const TX = { to: KEY, data: '0x', gasLimit: 21_000, value: 0n }
const FEES = { maxFeePerGas: 2n, maxPriorityFeePerGas: 1n }

describe("a key's signing line", () => {
  const redis = new Redis(testRedisUrl())
  const base = uniquePrefix('signing-line')

  afterAll(async () => {
    const keys = await redis.keys(`${base}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it("signs a batch again from the key's next nonce when its nonces were handed out since", async () => {
    const store = new TxStore(redis, base, 3_600)
    await redis.set(ownerKey(base, KEY), 'p1:1', 'PX', 60_000)
    // Redis says 12 while the line still thinks 9 (a batch at 9-11 recorded with its answer lost).
    expect(await store.syncNonce(KEY, 'p1:1', 12)).toBe(12)
    const signedAt: number[] = []
    const line = new SigningLine({
      address: KEY,
      store,
      sign: async (_tx, nonce) => {
        signedAt.push(nonce)
        return {
          hash: `0x${nonce}`,
          raw: `0x${nonce}`,
          maxFeePerGas: '2',
          maxPriorityFeePerGas: '1',
        }
      },
      broadcaster: { send: async () => undefined, drop: () => undefined },
      onBroadcast: () => undefined,
      fence: () => 'p1:1',
      resync: async () => (await store.syncNonce(KEY, 'p1:1', 0))!,
    })
    line.nextNonce = 9
    const signed = await line.signInOrder({ jobId: 'late', tx: TX, fees: FEES })
    expect(signed.nonce).toBe(12)
    expect(signedAt).toEqual([9, 12])
    expect((await store.load('late'))?.nonce).toBe(12)
    expect(await store.inflight(KEY)).toEqual([{ jobId: 'late', nonce: 12 }])
  })
})
