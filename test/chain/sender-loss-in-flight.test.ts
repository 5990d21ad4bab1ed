import { Redis } from 'ioredis'
import { Transaction, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTxSender, type TxSender } from '../../src/chain/sender/index.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startRpcProxy, type RpcProxy } from '../../chaos/rpc-proxy.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'
import { fulfilUint256, makeRequests, startTestChain, type TestChain } from './support.ts'

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address.toLowerCase()
/** A third of it is how often an owner renews its lease, and hears that Redis lost it. */
const KEY_LEASE_MS = 8_000
/** How long the old owner's last broadcast takes to reach the node: under a lease. */
const BROADCAST_DELAY_MS = 5_000

/**
 * Redis loses everything (a restart without persistence, a FLUSHALL) while the key's owner has a
 * broadcast on its way to the node, and another process takes the key before that broadcast lands.
 * Reading the node's count at once, the new owner would sign another transaction at the nonce the
 * old one is about to fill: one nonce handed out twice (chaos seed 20328's `one-fulfilment-per-nonce`).
 * A new owner that finds nothing of a used key in Redis waits a lease first, as a lock server waits
 * out a lock its holder may still believe it has, and the old broadcast is in the pool by then.
 * Fails without that wait: the second process signs its fulfilment at the old one's nonce.
 */
describe('transaction sender: Redis lost while a broadcast is on its way', () => {
  const prefix = uniquePrefix('sender-loss-in-flight')
  let chain: TestChain
  let redis: Redis
  let oldOwnerRpc: RpcProxy
  let newOwnerRpc: RpcProxy
  let oldOwnerRedis: TcpProxy
  const senders: TxSender[] = []

  beforeAll(async () => {
    chain = await startTestChain()
    redis = new Redis(testRedisUrl())
    oldOwnerRpc = await startRpcProxy(chain.anvil.rpcUrl)
    newOwnerRpc = await startRpcProxy(chain.anvil.rpcUrl)
    const redisUrl = new URL(testRedisUrl())
    oldOwnerRedis = await startTcpProxy(Number(redisUrl.port || 6379), redisUrl.hostname)
    const proxiedRedis = new URL(redisUrl)
    proxiedRedis.hostname = '127.0.0.1'
    proxiedRedis.port = String(oldOwnerRedis.port)
    for (const [rpcUrl, redisUrlOf] of [
      [oldOwnerRpc.url, proxiedRedis.toString()],
      [newOwnerRpc.url, testRedisUrl()],
    ] as const) {
      const sender = createTxSender({
        rpcUrl,
        chainId: chain.dev.chainId,
        keys: [NODE_KEY],
        redisUrl: redisUrlOf,
        prefix,
        pollIntervalMs: 50,
        keyLeaseMs: KEY_LEASE_MS,
        closeTimeoutMs: 200,
      })
      await sender.start()
      senders.push(sender)
    }
  })
  afterAll(async () => {
    oldOwnerRpc?.restore()
    oldOwnerRedis?.restore()
    for (const sender of senders) await sender.close().catch(() => undefined)
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
    await oldOwnerRpc?.close()
    await newOwnerRpc?.close()
    await oldOwnerRedis?.close()
    await chain?.stop()
  })

  it('the new owner signs after the old broadcast, never at its nonce', async () => {
    const [oldOwner, newOwner] = senders as [TxSender, TxSender]
    expect([oldOwner.ownership().owned, newOwner.ownership().owned]).toEqual([1, 0])
    const requests = await makeRequests(chain, 3)
    const submission = (index: number) => ({
      to: chain.dev.addresses.operator,
      data: fulfilUint256(requests[index]!, BigInt(index + 1)),
      idempotencyKey: requests[index]!.requestId,
    })
    // The key has sent before: its count on chain says it is in use.
    expect((await oldOwner.submit(submission(0))).status).toBe('mined')

    oldOwnerRpc.slow(BROADCAST_DELAY_MS)
    void oldOwner.submit(submission(1)).catch(() => undefined)
    await waitFor(
      'the old owner broadcasting',
      async () => rawsFrom(oldOwnerRpc).length > 1,
      60_000,
    )
    // The old owner is cut off from Redis (it cannot hear of the loss), and Redis loses the key.
    oldOwnerRedis.cut()
    const keys = await redis.keys(`${prefix}:*`)
    await redis.del(...keys)
    await waitFor('the new owner', async () => newOwner.ownership().available > 0, 60_000, 20)

    expect((await newOwner.submit(submission(2))).status).toBe('mined')
    const nonces = new Map<number, Set<string>>()
    for (const raw of [...rawsFrom(oldOwnerRpc), ...rawsFrom(newOwnerRpc)]) {
      const tx = Transaction.from(raw)
      nonces.set(tx.nonce, (nonces.get(tx.nonce) ?? new Set()).add(tx.hash as string))
    }
    const twice = [...nonces].filter(([, hashes]) => hashes.size > 1).map(([nonce]) => nonce)
    expect(twice).toEqual([])
    expect(nonces.size).toBe(3)
  })
})

/** The raw transactions of the node key that went through this proxy, in order. */
function rawsFrom(proxy: RpcProxy): string[] {
  return proxy.broadcasts
    .map((broadcast) => broadcast.raw)
    .filter((raw) => Transaction.from(raw).from?.toLowerCase() === NODE)
}
