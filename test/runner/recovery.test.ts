import { Redis } from 'ioredis'
import { JsonRpcProvider } from 'ethers'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RequestListener } from '../../src/chain/listener/index.ts'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { createRecovery } from '../../src/runner/recovery/index.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'
import { Writable } from 'node:stream'

/**
 * A rebuild from the chain that fails (the node away as Redis lost its state) is tried again until
 * it succeeds, and says so; the new generation is adopted only then.
 */
describe('recovery: a failed rebuild is tried again until it succeeds', () => {
  let anvil: Anvil
  let proxy: TcpProxy
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('recovery')

  beforeAll(async () => {
    anvil = await startAnvil()
    proxy = await startTcpProxy(Number(new URL(anvil.rpcUrl).port))
  })
  afterAll(async () => {
    await proxy?.close()
    await anvil?.stop()
    await redis.del(`${prefix}:generation`)
    redis.disconnect()
  })

  it('rewinds the listener once the node answers again, and adopts the new generation then', async () => {
    const provider = new JsonRpcProvider(proxy.url, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
    })
    const rewound: number[] = []
    const listener = { rewind: async (block: number) => void rewound.push(block) }
    const said: string[] = []
    const lines = new Writable({
      write(chunk: Buffer, _encoding, done) {
        said.push(...chunk.toString('utf8').split('\n').filter(Boolean))
        done()
      },
    })
    const recovery = createRecovery({
      redis,
      prefix,
      provider,
      operators: ['0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'],
      log: pino({ level: 'info' }, lines),
      checkEveryMs: 60_000,
      pooled: { keys: [], boundMs: 1_000, pollIntervalMs: 50 },
    })
    try {
      await recovery.adopt()
      await recovery.watch(listener as unknown as RequestListener)
      const adopted = await redis.get(`${prefix}:generation`)
      // Redis lost its state while the node is away.
      await redis.del(`${prefix}:generation`)
      proxy.cut()
      await expect(recovery.check()).rejects.toThrow()
      await expect(recovery.check()).rejects.toThrow()
      expect(rewound).toEqual([])
      expect(await redis.get(`${prefix}:generation`)).toBeNull()
      proxy.restore()
      expect(await recovery.check()).toBe(true)
      expect(rewound).toHaveLength(1)
      const generation = await redis.get(`${prefix}:generation`)
      expect(generation).not.toBeNull()
      expect(generation).not.toBe(adopted)
      // Done: the next check finds nothing lost.
      expect(await recovery.check()).toBe(false)
      expect(said.filter((line) => /Redis lost its state/.test(line))).toHaveLength(1)
      // Nothing is deployed at the Operator's address on this chain: its senders cannot be read, which
      // is said (the node away was not: that read failed and was tried again), and the rebuild goes on.
      expect(
        said.filter((line) => /could not read the authorised senders/.test(line)),
      ).toHaveLength(1)
      // Told once a minute at most while it fails, and once when it succeeded.
      expect(said.filter((line) => /the rebuild from the chain failed/.test(line))).toHaveLength(1)
      expect(said.filter((line) => /the rebuild from the chain succeeded/.test(line))).toHaveLength(
        1,
      )
    } finally {
      await recovery.stop()
      provider.destroy()
    }
  }, 60_000)
})
