import { Wallet, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sendConsumerRequests, type ConsumerRequest } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { oracleResponsesOf, revertedOnceIdle } from './support.ts'

const GAME_ODDS_ID = '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e01'

const request: ConsumerRequest = {
  externalJobId: GAME_ODDS_ID,
  valueType: 'uint256',
  params: [
    ['region', 'england'],
    ['sport', 'soccer'],
    ['league', 'epl'],
    ['date', '2024-08-16'],
    ['homeTeam', 'Man United'],
    ['path', '$.data.homeMoneyLine'],
    ['times', '100'],
  ],
  payment: 0n,
}

/**
 * A reorg that moves a request after its fulfilment was mined: the request is made again in a later
 * block, at a later time, so its cancelExpiration (and the Operator's commitment) changes, while the
 * fulfilment that answered it in the abandoned chain is gone with that chain. The fulfilment's bytes
 * carry the old parameters: sent again they can only revert ("Params do not match request ID"). The
 * node must answer the request as the chain now has it, once, and pay for no revert of its own.
 */
describe('reorgs: a request moved after its fulfilment was mined', () => {
  let stack: DevStack
  let provider: JsonRpcProvider

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-reorg-moved'),
    })
    provider = stack.contracts.provider as JsonRpcProvider
  }, 120_000)

  afterAll(async () => {
    await stack?.stop()
  })

  const node = () => new Wallet(stack.env.NODE_PRIVATE_KEY!).address
  const mined = () => provider.getTransactionCount(node(), 'latest')

  /** A snapshot, then the request made and answered: its raw transaction and its answers from then on. */
  async function answeredRequest() {
    const { consumer, deployer } = stack.contracts
    const snapshot = (await provider.send('evm_snapshot', [])) as string
    const base = await provider.getBlockNumber()
    const [sent] = await sendConsumerRequests(consumer, deployer, [request])
    const raw = (await provider.send('eth_getRawTransactionByHash', [sent!.txHash])) as string
    const answers = (fromBlock: number) => oracleResponsesOf(stack, sent!.requestId, fromBlock)
    const answered = async () => (await answers(base + 1)).length > 0
    await waitFor('the first answer', answered, 60_000, 50)
    return { sent: sent!, raw, snapshot, answers, answered }
  }

  /** The reorg: back to before the request, the node's answer dropped with the old chain, 30 s on. */
  async function reorgBack(snapshot: string): Promise<number> {
    expect(await provider.send('evm_revert', [snapshot])).toBe(true)
    await provider.send('anvil_dropAllTransactions', [])
    await provider.send('evm_increaseTime', [30])
    await provider.send('evm_mine', [])
    return provider.getBlockNumber()
  }

  it('answers the moved request once, and sends no fulfilment that the chain now refuses', async () => {
    const { sent, raw, snapshot, answers, answered } = await answeredRequest()
    // The request made again right after the reorg, with a later cancelExpiration.
    const reorgedAt = await reorgBack(snapshot)
    expect(await answered()).toBe(false)
    await provider.send('eth_sendRawTransaction', [raw])
    await waitFor('the answer in the new chain', answered, 90_000, 100)
    expect(await revertedOnceIdle(provider, node(), reorgedAt)).toBe(0)
    expect(await answers(reorgedAt)).toHaveLength(1)
    expect(await stack.contracts.consumer.getFunction('isFulfilled')(sent.requestId)).toBe(true)
  }, 240_000)

  it('holds the answer of a request the reorg took away until the request is back, and pays for no revert', async () => {
    const held = () => (stack.runner?.sender?.stats() ?? []).reduce((sum, key) => sum + key.held, 0)
    const { raw, snapshot, answers, answered } = await answeredRequest()
    const heldBefore = held()
    // The node looks before the request is made again: the answer's bytes have no request to
    // answer. Sent then (a node that resends what a reorg took away at once), they are mined and
    // revert; held, they wait for the request.
    const reorgedAt = await reorgBack(snapshot)
    expect(await answered()).toBe(false)
    const minedAfterReorg = await mined()
    await waitFor(
      'the node to decide what to do with the answer the reorg took away',
      async () => held() > heldBefore || (await mined()) > minedAfterReorg,
      60_000,
      50,
    )
    await provider.send('eth_sendRawTransaction', [raw])
    await waitFor('the answer in the new chain', answered, 90_000, 100)
    expect(await revertedOnceIdle(provider, node(), reorgedAt)).toBe(0)
    expect(await answers(reorgedAt)).toHaveLength(1)
    expect(held()).toBeGreaterThan(heldBefore)
  }, 240_000)
})
