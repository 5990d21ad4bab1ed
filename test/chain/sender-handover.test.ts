import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTxSender } from '../../src/chain/sender/index.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startRpcProxy, type RpcProxy } from '../../chaos/rpc-proxy.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { settlesWithin } from '../support/settles-within.ts'
import { fulfilUint256, makeRequests, startTestChain, type TestChain } from './support.ts'

/**
 * A key handed over while one of its transactions is still being broadcast (the process lost the
 * key's lease as Redis was flushed, or it is closing): the job's wait is told, and nothing is left
 * to reject with nobody listening. An unhandled rejection ends a Node process: a runner died this way
 * after a FLUSHALL, silently as far as its logs went (test/reliability/redis-loss.test.ts).
 */
describe('transaction sender: a key handed over during a broadcast', () => {
  let chain: TestChain
  let proxy: RpcProxy
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => void unhandled.push(reason)

  beforeAll(async () => {
    chain = await startTestChain()
    proxy = await startRpcProxy(chain.anvil.rpcUrl)
    process.on('unhandledRejection', onUnhandled)
  })
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled)
    await proxy?.close()
    await chain?.stop()
  })

  it('tells the waiting job, and leaves no rejection unhandled', async () => {
    const [request] = await makeRequests(chain, 1)
    const sender = createTxSender({
      rpcUrl: proxy.url,
      chainId: chain.dev.chainId,
      keys: [ANVIL_PRIVATE_KEYS[1]],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('sender-handover'),
      pollIntervalMs: 50,
      closeTimeoutMs: 100,
    })
    await sender.start()
    // Every call now takes 2 s: the broadcast is still out when the key is handed over.
    proxy.slow(2_000)
    const submitted = sender
      .submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request!, 7n),
        idempotencyKey: request!.requestId,
      })
      .then(
        () => 'settled',
        (error: Error) => error.name,
      )
    await waitFor('the broadcast at the node', async () => proxy.broadcasts.length > 0, 60_000, 10)
    const closing = sender.close()
    expect(await settlesWithin(submitted, 30_000)).toBe('HandedOverError')
    proxy.restore()
    await closing
    // Rejections are told as unhandled once the microtasks of their turn ran: give them a turn.
    await new Promise((resolveLater) => setTimeout(resolveLater, 2_500))
    expect(unhandled).toEqual([])
  })
})
