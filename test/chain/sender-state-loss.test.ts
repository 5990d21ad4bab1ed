import { Redis } from 'ioredis'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTxSender, type TxSender } from '../../src/chain/sender/index.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { fulfilUint256, makeRequests, rpc, startTestChain, type TestChain } from './support.ts'

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address

/**
 * Two processes send with one key; Redis then loses the key's nonce counter. The process that sent
 * least recently must not take its next nonce from its own memory (a nonce the other process used):
 * it takes the node's pending count.
 */
describe('transaction sender: the nonce counter lost in Redis', () => {
  const prefix = uniquePrefix('sender-loss')
  let chain: TestChain
  let redis: Redis
  const senders: TxSender[] = []

  beforeAll(async () => {
    chain = await startTestChain()
    redis = new Redis(testRedisUrl())
    for (let index = 0; index < 2; index++) {
      const sender = createTxSender({
        rpcUrl: chain.anvil.rpcUrl,
        chainId: chain.dev.chainId,
        keys: [NODE_KEY],
        redisUrl: testRedisUrl(),
        prefix,
        pollIntervalMs: 20,
      })
      await sender.start()
      senders.push(sender)
    }
  })
  afterAll(async () => {
    for (const sender of senders) await sender.close()
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
    await chain?.stop()
  })

  const nodeNonce = async (tag: 'latest' | 'pending') =>
    Number(await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [NODE, tag]))

  it('takes the next nonce from the node, not from a process that lags behind the other', async () => {
    const [a, b] = senders as [TxSender, TxSender]
    const requests = await makeRequests(chain, 14)
    const send = (sender: TxSender, index: number) =>
      sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(requests[index]!, BigInt(index + 1)),
        idempotencyKey: requests[index]!.requestId,
      })
    // b allocates once, in the middle; a allocates before and after it.
    for (let index = 0; index < 6; index++) expect((await send(a, index)).status).toBe('mined')
    expect((await send(b, 6)).status).toBe('mined')
    for (let index = 7; index < 13; index++) expect((await send(a, index)).status).toBe('mined')

    const keys = await redis.keys(`${prefix}:*`)
    expect(keys.some((key) => key.endsWith(':nonce'))).toBe(true)
    await redis.del(...keys)

    const next = await nodeNonce('pending')
    const sentBefore = b.stats()[0]!.sent
    const afterLoss = await send(b, 13)
    expect(afterLoss.status).toBe('mined')
    expect(afterLoss.nonce).toBe(next)
    // One transaction signed and sent: none with a nonce the other process had used.
    expect(b.stats()[0]!.sent - sentBefore).toBe(1)
    expect(await nodeNonce('latest')).toBe(next + 1)
  })
})
