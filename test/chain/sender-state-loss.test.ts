import { Redis } from 'ioredis'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createTxSender,
  txStateBase,
  type TxResult,
  type TxSender,
  type TxSubmission,
} from '../../src/chain/sender/index.ts'
import { waitFor } from '../../src/dev/process.ts'
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
        keyLeaseMs: 1_000,
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

  it('the owner of a key whose state Redis lost loses its lease; the key is taken again and its next nonce read from the node, never one already used', async () => {
    const [a, b] = senders as [TxSender, TxSender]
    // One process owns the key: the first started. The other stands by.
    expect([a.ownership().owned, b.ownership().owned]).toEqual([1, 0])
    const requests = await makeRequests(chain, 8)
    const send = (index: number) =>
      submitToOwner(senders, {
        to: chain.dev.addresses.operator,
        data: fulfilUint256(requests[index]!, BigInt(index + 1)),
        idempotencyKey: requests[index]!.requestId,
      })
    for (let index = 0; index < 7; index++) expect((await send(index)).status).toBe('mined')

    const keys = await redis.keys(`${prefix}:*`)
    expect(keys.some((key) => key.endsWith(':nonce'))).toBe(true)
    await redis.del(...keys)
    const next = await nodeNonce('pending')
    const sentBefore = a.stats()[0]!.sent + b.stats()[0]!.sent
    const leasesLostBefore = a.stats()[0]!.leasesLost
    await waitFor(
      'the lease found lost',
      async () => a.stats()[0]!.leasesLost > leasesLostBefore,
      10_000,
      20,
    )

    const afterLoss = await send(7)
    expect(afterLoss.status).toBe('mined')
    expect(afterLoss.nonce).toBe(next)
    // One transaction signed and sent: none with a nonce used before the loss.
    expect(a.stats()[0]!.sent + b.stats()[0]!.sent - sentBefore).toBe(1)
    expect(await nodeNonce('latest')).toBe(next + 1)
    // Still one owner.
    expect(a.ownership().owned + b.ownership().owned).toBe(1)
  })

  it("a process that never had the key, taking it while Redis's next nonce is behind the node's count (an older snapshot restored), signs at the node's count", async () => {
    const restored = uniquePrefix('sender-restored')
    const stale = await nodeNonce('pending')
    // The key's transactions Redis does not know of: sent after the snapshot it was restored from.
    const wallet = new Wallet(NODE_KEY, chain.dev.provider)
    for (let index = 0; index < 3; index++)
      await (await wallet.sendTransaction({ to: NODE, value: 0n })).wait()
    const next = await nodeNonce('pending')
    expect(next).toBe(stale + 3)
    await redis.set(
      `${txStateBase(restored, chain.dev.chainId)}:${NODE.toLowerCase()}:nonce`,
      stale,
    )
    const [request] = await makeRequests(chain, 1)
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: restored,
      pollIntervalMs: 20,
    })
    senders.push(sender)
    await sender.start()
    const result = await submitToOwner([sender], {
      to: chain.dev.addresses.operator,
      data: fulfilUint256(request!, 9n),
      idempotencyKey: request!.requestId,
    })
    expect(result).toMatchObject({ status: 'mined', nonce: next })
    expect(sender.stats()[0]!.sent).toBe(1)
    const keys = await redis.keys(`${restored}:*`)
    if (keys.length > 0) await redis.del(...keys)
  })
})

/** Submits through whichever sender owns the key now (as a run retried by its queue would). */
async function submitToOwner(
  senders: readonly TxSender[],
  submission: TxSubmission,
): Promise<TxResult> {
  for (let tries = 0; ; tries++) {
    const owner = senders.find((sender) => sender.ownership().available > 0)
    if (owner) return owner.submit(submission)
    if (tries > 300) throw new Error('no sender owns the key')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
