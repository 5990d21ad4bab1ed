import { beforeAll, describe, expect, it } from 'vitest'
import type { JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import { CHECKPOINT_STORE_EVERY_BLOCKS } from '../../src/chain/listener/checkpoint.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startTcpProxy } from '../support/tcp-proxy.ts'
import { useListenerTestChain } from './listener-support.ts'
import { makeRequests, rpc, type TestChain } from './support.ts'

/**
 * The checkpoint the listener stores in Redis: once in CHECKPOINT_STORE_EVERY_BLOCKS blocks, never
 * past the one in memory, at once when a reorg moves it back, and when the listener stops. A listener
 * that died reads again at most those blocks, and delivers none of their requests twice.
 */
describe('the stored listener checkpoint', () => {
  const testChain = useListenerTestChain()
  const { head, listen } = testChain
  let chain: TestChain
  let provider: JsonRpcProvider
  let redis: Redis

  beforeAll(() => {
    ;({ chain, provider, redis } = testChain)
  })

  const storedAt = async (prefix: string): Promise<number | undefined> => {
    const stored = await redis.get(`${prefix}:listener:${chain.dev.chainId}:default:checkpoint`)
    return stored === null ? undefined : (JSON.parse(stored) as { number: number }).number
  }

  it('is stored once in so many blocks, never ahead of the listener, and when it stops', async () => {
    const prefix = uniquePrefix('checkpoint')
    const { listener } = listen({ prefix, fromBlock: (await head()) + 1 })
    const storedValues = new Set<number>()
    const blocks = CHECKPOINT_STORE_EVERY_BLOCKS * 2 + 5
    for (let block = 0; block < blocks; block++) {
      await rpc(provider, 'anvil_mine', ['0x1'])
      await listener.poll()
      const stored = await storedAt(prefix)
      expect(stored).toBeDefined()
      storedValues.add(stored!)
      expect(stored!).toBeLessThanOrEqual(listener.checkpoint!)
      expect(listener.checkpoint! - stored!).toBeLessThan(CHECKPOINT_STORE_EVERY_BLOCKS)
    }
    // A write a block would have stored every value; the first scan, then one in so many.
    expect(storedValues.size).toBeLessThanOrEqual(
      Math.ceil(blocks / CHECKPOINT_STORE_EVERY_BLOCKS) + 1,
    )
    await listener.stop()
    expect(await storedAt(prefix)).toBe(listener.checkpoint)
  })

  it('read back by a listener after one that died: the blocks after it again, no request twice', async () => {
    const prefix = uniquePrefix('checkpoint')
    const first = listen({ prefix, fromBlock: (await head()) + 1 })
    await first.listener.poll()
    const [early] = await makeRequests(chain, 1)
    await rpc(provider, 'anvil_mine', ['0x3'])
    await first.listener.poll()
    expect(first.requests.map((event) => event.requestId)).toEqual([early!.requestId])
    // The first listener is never stopped (it died): its checkpoint in Redis is behind its last scan.
    expect(await storedAt(prefix)).toBeLessThan(first.listener.checkpoint!)
    const [late] = await makeRequests(chain, 1)
    const second = listen({ prefix })
    await second.listener.poll()
    expect(second.requests.map((event) => event.requestId)).toEqual([late!.requestId])
    expect(second.listener.stats.skippedAsConsumed).toBe(1)
  })

  it('moves back in Redis at once when a reorg moves it back', async () => {
    const prefix = uniquePrefix('checkpoint')
    const { listener } = listen({ prefix, fromBlock: (await head()) + 1, rewindDepth: 4 })
    await listener.poll()
    const reorg = await testChain.markForReorg()
    await rpc(provider, 'anvil_mine', ['0x2'])
    await listener.poll()
    const before = await storedAt(prefix)
    // Other blocks under the checkpoint in memory.
    await reorg(2)
    const [request] = await makeRequests(chain, 1)
    await listener.poll()
    expect(listener.stats.reorgs).toBe(1)
    const after = await storedAt(prefix)
    // Stored by the scan after the reorg (no wait of so many blocks), on the chain as it is now.
    expect(after).not.toBe(before)
    expect(after).toBe(listener.checkpoint)
    expect(after).toBeGreaterThanOrEqual(request!.blockNumber)
    const stored = JSON.parse(
      (await redis.get(`${prefix}:listener:${chain.dev.chainId}:default:checkpoint`))!,
    ) as { number: number; hash: string }
    const canonical = await rpc<{ hash: string }>(provider, 'eth_getBlockByNumber', [
      `0x${stored.number.toString(16)}`,
      false,
    ])
    expect(stored.hash).toBe(canonical.hash)
  })

  it('stops while Redis is away without waiting for it: the checkpoint stays as it was stored', async () => {
    const prefix = uniquePrefix('checkpoint')
    const proxy = await startTcpProxy(Number(new URL(testRedisUrl()).port))
    // The runner's kind of connection: it queues commands while Redis is away, and waits for it.
    const throughProxy = createRedisConnection(`redis://127.0.0.1:${proxy.port}`, 'worker')
    throughProxy.on('error', () => undefined)
    try {
      const { listener } = listen({ prefix, redis: throughProxy, fromBlock: (await head()) + 1 })
      await listener.poll()
      const stored = await storedAt(prefix)
      await rpc(provider, 'anvil_mine', ['0x3'])
      await listener.poll()
      expect(listener.checkpoint).toBeGreaterThan(stored!)
      proxy.cut()
      // Resolves (a hang would hold the test to its time limit): the write is given up, not queued.
      await listener.stop()
      expect(await storedAt(prefix)).toBe(stored)
    } finally {
      throughProxy.disconnect()
      await proxy.close()
    }
  })

  it('asks a fromBlock function only when no checkpoint is stored, and starts where it says', async () => {
    const prefix = uniquePrefix('checkpoint')
    let asked = 0
    const start = (await head()) + 1
    const fromBlock = async () => {
      asked += 1
      return start
    }
    const first = listen({ prefix, fromBlock })
    await first.listener.poll()
    expect(asked).toBe(1)
    expect(first.listener.checkpoint).toBeGreaterThanOrEqual(start - 1)
    await rpc(provider, 'anvil_mine', ['0x2'])
    await first.listener.poll()
    await first.listener.stop()
    // A restart finds the checkpoint: the function (a wait for the node's pool, in the runner) is
    // not asked again.
    const second = listen({ prefix, fromBlock })
    await second.listener.poll()
    expect(asked).toBe(1)
    expect(second.listener.checkpoint).toBe(first.listener.checkpoint)
    await second.listener.stop()
  })
})
