import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RedisPair } from '../../chaos/redis-pair.ts'
import { waitFor } from '../../src/dev/process.ts'
import { RedisGeneration } from '../../src/runner/recovery/generation.ts'

/**
 * A failover to a replica that has the generation key (replicated long before) but may lack the last
 * writes: the generation alone cannot tell, the server's run_id can. Fault search seed 20099: a
 * replica still resyncing after its primary restarted was promoted, the requests taken in meanwhile
 * (run records and queue jobs) were gone, and nothing rebuilt them.
 */
describe('Redis generation: another server after a reconnection counts as a loss', () => {
  let pair: RedisPair
  let client: Redis

  beforeAll(async () => {
    pair = await RedisPair.start()
    client = new Redis(pair.url, { maxRetriesPerRequest: 3 })
  }, 60_000)

  afterAll(async () => {
    client?.disconnect()
    await pair?.stop()
  })

  const answering = () =>
    waitFor(
      'the client answered again',
      async () => (await client.ping().catch(() => '')) === 'PONG',
      30_000,
      50,
    )

  it('a reconnection to the same server is no loss; a failover to the replica is, until adopted', async () => {
    const generation = new RedisGeneration(client, 'test:generation')
    await generation.adopt()
    // The replica has the generation: the key alone would say nothing was lost.
    expect(await client.wait(1, 10_000)).toBe(1)
    expect(await generation.loss()).toBeUndefined()

    await client.client('KILL', 'TYPE', 'normal').catch(() => undefined)
    await answering()
    expect(await generation.loss()).toBeUndefined()

    await pair.failover()
    await answering()
    expect(await client.get('test:generation')).not.toBeNull()
    expect(await generation.loss()).toBe('other-server')
    // Still lost until a rebuild adopts what is there now.
    expect(await generation.loss()).toBe('other-server')
    await generation.adopt()
    expect(await generation.loss()).toBeUndefined()
  }, 120_000)
})
