import { Redis } from 'ioredis'
import { Transaction, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTxSender, type TxSender } from '../../src/chain/sender/index.ts'
import { HandedOverError } from '../../src/chain/sender/model.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startRpcProxy, type RpcProxy } from '../../chaos/rpc-proxy.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { fulfilUint256, makeRequests, rpc, startTestChain, type TestChain } from './support.ts'

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address

/**
 * A key's owner posts one batch at a time (ordered-broadcast.ts): what it signs while a batch is out
 * waits for the next. When the owner hears its lease is gone, what waits has not reached the node
 * yet, and posted later it could land at a nonce the key's next owner reads as free. So the owner
 * drops it: those runs fail at once, handed over, and their bytes never leave.
 * Fails when KeySender.handOver no longer drops the broadcaster's queue: the second run then waits
 * for the held batch, and its bytes follow it to the node.
 */
describe('transaction sender: a lease lost while a batch is on its way', () => {
  const prefix = uniquePrefix('sender-handover-queued')
  let chain: TestChain
  let redis: Redis
  let proxy: RpcProxy
  let sender: TxSender

  beforeAll(async () => {
    chain = await startTestChain()
    redis = new Redis(testRedisUrl())
    proxy = await startRpcProxy(chain.anvil.rpcUrl)
    sender = createTxSender({
      rpcUrl: proxy.url,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix,
      pollIntervalMs: 50,
      keyLeaseMs: 3_000,
      closeTimeoutMs: 200,
    })
    await sender.start()
  })
  afterAll(async () => {
    proxy?.restore()
    await sender?.close().catch(() => undefined)
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
    await proxy?.close()
    await chain?.stop()
  })

  it('drops what it signed but has not posted: those runs fail handed over, their bytes never leave', async () => {
    const requests = await makeRequests(chain, 2)
    const submission = (index: number) => ({
      to: chain.dev.addresses.operator,
      data: fulfilUint256(requests[index]!, BigInt(index + 1)),
      idempotencyKey: requests[index]!.requestId,
    })
    const before = Number(
      await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest']),
    )

    proxy.holdBroadcasts()
    void sender.submit(submission(0)).catch(() => undefined)
    await waitFor('the first batch on its way', async () => rawsFrom(proxy).length === 1, 60_000)
    let second: unknown
    sender.submit(submission(1)).then(
      (result) => (second = result),
      (error: unknown) => (second = error),
    )
    await waitFor('the second signed behind it', async () => sender.stats()[0]!.sent === 2, 60_000)

    // Redis loses the lease: the owner hears it at its next renewal, with the first batch still out.
    const keys = await redis.keys(`${prefix}:*`)
    await redis.del(...keys)
    await waitFor('the second run ended', async () => second !== undefined, 60_000)
    expect(second).toBeInstanceOf(HandedOverError)
    expect(rawsFrom(proxy).map((raw) => raw.nonce)).toEqual([before])

    // The node answers the batch it held: the first transaction is mined, and nothing follows it.
    proxy.restore()
    await waitFor(
      'the first transaction mined',
      async () =>
        Number(await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, 'latest'])) >
        before,
      60_000,
    )
    expect(rawsFrom(proxy).map((raw) => raw.nonce)).toEqual([before])
  }, 180_000)
})

/** The node key's transactions that went through the proxy, in order. */
function rawsFrom(proxy: RpcProxy): Transaction[] {
  return proxy.broadcasts
    .map((broadcast) => Transaction.from(broadcast.raw))
    .filter((tx) => tx.from === NODE)
}
