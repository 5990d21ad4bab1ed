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

interface Receipt {
  transactionHash: string
  blockNumber: string
  blockHash: string
}
type TestRequest = Awaited<ReturnType<typeof makeRequests>>[number]

/**
 * A reorg takes a fulfilment away after its job ended (mined, settled, its run told): the node no
 * longer has it, mined or pooled, and nothing else would send it (the chaos search's seed 30). The
 * key's owner watches what it mined until CHAIN_FINALITY_DEPTH deep, and sends it again: the same
 * transaction is mined in the new chain, and the request is answered, as the run record says.
 */
describe('transaction sender: a fulfilment a reorg took away after its job ended', () => {
  let chain: TestChain
  let sender: TxSender
  const prefix = uniquePrefix('sender-reorg')
  const newSender = () =>
    createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix,
      pollIntervalMs: 50,
      finalityDepth: 10,
    })

  beforeAll(async () => {
    chain = await startTestChain()
    sender = newSender()
    await sender.start()
  })
  afterAll(async () => {
    await sender?.close()
    await chain?.stop()
  })

  /** The job of `request`'s fulfilment, submitted (again) to `tx`; its end within a hang catcher. */
  const submit = async (tx: TxSender, request: TestRequest) => {
    const result = await settlesWithin(
      tx.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request, 7n),
        idempotencyKey: request.requestId,
      }),
      60_000,
    )
    if (result === 'timed out') throw new Error('the fulfilment job did not end within 60 s')
    return result
  }
  /** Waits (a hang catcher only) until the transaction is mined in a block other than `notIn`. */
  const minedAgain = async (txHash: string | undefined, notIn: string): Promise<Receipt> => {
    let again: Receipt | null = null
    await waitFor(
      'the same fulfilment mined again',
      async () => {
        again = await rpc<Receipt | null>(provider(), 'eth_getTransactionReceipt', [txHash])
        return again !== null && again.blockHash !== notIn
      },
      60_000,
      50,
    )
    return again as unknown as Receipt
  }

  const provider = () => chain.dev.provider
  const minedNonce = async () =>
    Number(await rpc<string>(provider(), 'eth_getTransactionCount', [NODE, 'latest']))

  it('is sent again, the same bytes, and mined in the new chain', async () => {
    const [request] = await makeRequests(chain, 1)
    const before = await minedNonce()
    const result = await submit(sender, request!)
    expect(result).toMatchObject({ status: 'mined', nonce: before })
    const first = await rpc<Receipt>(provider(), 'eth_getTransactionReceipt', [result.txHash])

    // The block holding it replaced by an empty one: the fulfilment is gone from the node (the
    // sender may be quick to send it again, so the new block is what tells).
    await rpc(provider(), 'anvil_reorg', [1, []])
    const replaced = await rpc<{ hash: string; transactions: string[] }>(
      provider(),
      'eth_getBlockByNumber',
      [first.blockNumber, false],
    )
    expect(replaced.hash).not.toBe(first.blockHash)
    expect(replaced.transactions).not.toContain(result.txHash)

    // The sender's next poll sees a head that does not extend the last, and the key's nonce fallen.
    const again = await minedAgain(result.txHash, first.blockHash)
    expect(again.blockHash).not.toBe(first.blockHash)
    expect(await minedNonce()).toBe(before + 1)
    expect(sender.stats()[0]).toMatchObject({ reorgedOut: 1, sent: 1 })

    // A run of the job retried now finds it mined again, not a result the chain no longer has.
    const resumed = await submit(sender, request!)
    expect(resumed).toMatchObject({ status: 'mined', txHash: result.txHash })
    expect(resumed.blockNumber).toBe(Number(again.blockNumber))
  })

  it("is sent again by the key's next owner when the reorg comes after a hand-over", async () => {
    const [request] = await makeRequests(chain, 1)
    const result = await submit(sender, request!)
    expect(result.status).toBe('mined')
    // The owner closes (its key handed over); another process takes the key.
    await sender.close()
    sender = newSender()
    await sender.start()
    await waitFor('the new owner sending', async () => sender.ownership().available === 1, 60_000)

    const first = await rpc<Receipt>(provider(), 'eth_getTransactionReceipt', [result.txHash])
    await rpc(provider(), 'anvil_reorg', [1, []])
    // A hang catcher only: the new owner watches what the one before mined (the store's index).
    expect((await minedAgain(result.txHash, first.blockHash)).transactionHash).toBe(result.txHash)
    expect(sender.stats()[0]).toMatchObject({ reorgedOut: 1, sent: 0 })
  })
})
