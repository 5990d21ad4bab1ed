import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scanKeyBatches, scanKeys } from '../../src/queue/scan-keys.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

/** scanKeys on a plain Redis (the cluster's masters: test/queue/redis-cluster.test.ts). */
describe('scanKeys on a plain Redis', () => {
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('scan')
  // More keys than one SCAN reply answers with the COUNT hints below: the cursor loop is needed.
  const wanted = Array.from({ length: 1_200 }, (_, index) => `${prefix}:a:${index}`)

  beforeAll(async () => {
    const pipeline = redis.pipeline()
    for (const key of wanted) pipeline.set(key, '1')
    pipeline.set(`${prefix}:b:0`, '1')
    await pipeline.exec()
  })

  afterAll(async () => {
    for await (const keys of scanKeyBatches(redis, `${prefix}:*`)) await redis.unlink(...keys)
    redis.disconnect()
  })

  it('finds every key the pattern matches, and only those', async () => {
    const found = await scanKeys(redis, `${prefix}:a:*`, { count: 100 })
    expect(found.sort()).toEqual([...wanted].sort())
    expect(await scanKeys(redis, `${prefix}:b:*`)).toEqual([`${prefix}:b:0`])
    expect(await scanKeys(redis, `${prefix}:none:*`)).toEqual([])
  })

  it('stops at the limit', async () => {
    const found = await scanKeys(redis, `${prefix}:a:*`, { count: 100, limit: 3 })
    expect(found).toHaveLength(3)
    for (const key of found) expect(wanted).toContain(key)
  })

  it('answers in SCAN replies, none of them empty', async () => {
    const batches: string[][] = []
    for await (const keys of scanKeyBatches(redis, `${prefix}:a:*`, 100)) batches.push(keys)
    expect(batches.length).toBeGreaterThan(1)
    for (const keys of batches) expect(keys.length).toBeGreaterThan(0)
    expect(new Set(batches.flat())).toEqual(new Set(wanted))
  })
})
