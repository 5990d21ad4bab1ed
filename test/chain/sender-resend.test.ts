import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTxSender, type TxSender } from '../../src/chain/sender/index.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { settlesWithin } from '../support/settles-within.ts'
import { fulfilUint256, makeRequests, rpc, startTestChain, type TestChain } from './support.ts'

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address

interface PoolContent {
  pending: Record<string, Record<string, { hash: string }>>
}

/**
 * The node loses a transaction the key sent (anvil drops it from its pool, as a node that restarts or
 * evicts does). On a chain that mines only when a transaction arrives no block comes, so neither a bump
 * (after blocks) nor a filler ever happens: the sender sends the same bytes again once the key's mined
 * nonce has stood still for resendAfterMs.
 */
describe('transaction sender: a transaction the node lost', () => {
  let chain: TestChain
  let sender: TxSender

  beforeAll(async () => {
    chain = await startTestChain()
    sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('sender-resend'),
      pollIntervalMs: 50,
      resendAfterMs: 1_000,
    })
    await sender.start()
  })
  afterAll(async () => {
    await sender?.close()
    await chain?.stop()
  })

  const provider = () => chain.dev.provider
  const minedNonce = async () =>
    Number(await rpc<string>(provider(), 'eth_getTransactionCount', [NODE, 'latest']))

  it('is sent again, the same transaction, and mined once, with no block to wake the sender', async () => {
    const [request] = await makeRequests(chain, 1)
    const before = await minedNonce()
    await rpc(provider(), 'evm_setAutomine', [false])
    const submitted = sender.submit({
      to: chain.dev.addresses.operator,
      data: fulfilUint256(request!, 7n),
      idempotencyKey: request!.requestId,
    })
    let hash = ''
    await waitFor(
      'the fulfilment in the node pool',
      async () => {
        const content = await rpc<PoolContent>(provider(), 'txpool_content')
        const own = Object.entries(content.pending).find(
          ([from]) => from.toLowerCase() === NODE.toLowerCase(),
        )?.[1]
        hash = Object.values(own ?? {})[0]?.hash ?? ''
        return hash !== ''
      },
      60_000,
      20,
    )
    await rpc(provider(), 'anvil_dropTransaction', [hash])
    await rpc(provider(), 'evm_setAutomine', [true])

    // A hang catcher: the resend is due a second after the drop, and nothing else sends.
    const result = await settlesWithin(submitted, 60_000)
    expect(result).toMatchObject({ status: 'mined', txHash: hash, nonce: before })
    expect(await minedNonce()).toBe(before + 1)
    const [stats] = sender.stats()
    expect(stats).toMatchObject({ sent: 1, bumped: 0, filled: 0 })
    expect(stats!.resent).toBeGreaterThan(0)
  })
})
