import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { claimKey, claimPrefix } from '../../src/dev/prefix-claim.ts'
import { waitFor } from '../../src/dev/process.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

/**
 * A dev stack's claim of its queue prefix is renewed every 5 s. Redis losing it with everything else
 * (a FLUSHALL under `npm start`) is not another stack taking it: the stack said "another dev stack
 * took this queue prefix" after a flush, with no other stack anywhere.
 */
describe('dev stack: the claim of its queue prefix', () => {
  const redis = new Redis(testRedisUrl())
  afterAll(() => redis.disconnect())

  it('is claimed again when Redis lost it, without saying another stack took it', async () => {
    const prefix = uniquePrefix('claim-lost')
    let lost = 0
    const claim = await claimPrefix(redis, prefix, '/checkout', testRedisUrl(), () => (lost += 1))
    const held = await redis.get(claimKey(prefix))
    expect(await redis.del(claimKey(prefix))).toBe(1)
    await waitFor(
      'the claim back',
      async () => (await redis.get(claimKey(prefix))) === held,
      30_000,
    )
    expect(lost).toBe(0)
    await claim.release()
    expect(await redis.exists(claimKey(prefix))).toBe(0)
  })

  it('says so once when another stack holds it', async () => {
    const prefix = uniquePrefix('claim-taken')
    let lost = 0
    const claim = await claimPrefix(redis, prefix, '/checkout', testRedisUrl(), () => (lost += 1))
    await redis.set(claimKey(prefix), '{"pid":1}', 'PX', 60_000)
    await waitFor('the loss told', async () => lost > 0, 30_000)
    expect(await redis.get(claimKey(prefix))).toBe('{"pid":1}')
    await claim.release()
    await redis.del(claimKey(prefix))
    expect(lost).toBe(1)
  })
})
