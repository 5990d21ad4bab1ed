import { Wallet, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sendConsumerRequests, type ConsumerRequest } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

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

  it('answers the moved request once, and sends no fulfilment that the chain now refuses', async () => {
    const { consumer, deployer, operator } = stack.contracts
    const node = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
    const operatorAddress = await operator.getAddress()
    const responseTopic = operator.interface.getEvent('OracleResponse')!.topicHash
    const snapshot = (await provider.send('evm_snapshot', [])) as string
    const base = await provider.getBlockNumber()

    const [sent] = await sendConsumerRequests(consumer, deployer, [request])
    const raw = (await provider.send('eth_getRawTransactionByHash', [sent!.txHash])) as string
    const answered = async () =>
      (
        await provider.getLogs({
          address: operatorAddress,
          topics: [responseTopic, sent!.requestId],
          fromBlock: base + 1,
        })
      ).length > 0
    await waitFor('the first answer', answered, 60_000, 50)

    // The reorg: back to before the request, the node's answer gone with the old chain (dropped, as
    // a node that never sees it again does), and the request made again 30 s later.
    expect(await provider.send('evm_revert', [snapshot])).toBe(true)
    await provider.send('anvil_dropAllTransactions', [])
    await provider.send('evm_increaseTime', [30])
    await provider.send('evm_mine', [])
    const reorgedAt = await provider.getBlockNumber()
    await provider.send('eth_sendRawTransaction', [raw])
    expect(await answered()).toBe(false)

    await waitFor('the answer in the new chain', answered, 90_000, 100)
    // What the node still had in flight settles before the chain is read.
    await waitFor(
      'the node key idle',
      async () =>
        Number(await provider.send('eth_getTransactionCount', [node, 'pending'])) ===
        (await provider.getTransactionCount(node, 'latest')),
      60_000,
      100,
    )
    // A few more blocks: a fulfilment sent late is mined too before the chain is read.
    for (let index = 0; index < 3; index++) await provider.send('evm_mine', [])
    const nodeTxs: Array<{ hash: string; status: number | null; to: string | null }> = []
    for (let number = reorgedAt; number <= (await provider.getBlockNumber()); number++) {
      const block = await provider.getBlock(number, true)
      for (const tx of block?.prefetchedTransactions ?? []) {
        if (tx.from.toLowerCase() !== node.toLowerCase()) continue
        const receipt = await provider.getTransactionReceipt(tx.hash)
        nodeTxs.push({ hash: tx.hash, status: receipt?.status ?? null, to: tx.to })
      }
    }
    const responses = await provider.getLogs({
      address: operatorAddress,
      topics: [responseTopic, sent!.requestId],
      fromBlock: reorgedAt,
    })
    expect(responses).toHaveLength(1)
    expect(
      nodeTxs.filter((tx) => tx.status !== 1),
      JSON.stringify(nodeTxs),
    ).toEqual([])
    expect(await consumer.getFunction('isFulfilled')(sent!.requestId)).toBe(true)
  }, 240_000)

  it('holds the answer of a request the reorg took away until the request is back, and pays for no revert', async () => {
    const { consumer, deployer, operator } = stack.contracts
    const node = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
    const operatorAddress = await operator.getAddress()
    const responseTopic = operator.interface.getEvent('OracleResponse')!.topicHash
    const held = () => (stack.runner?.sender?.stats() ?? []).reduce((sum, key) => sum + key.held, 0)
    const mined = () => provider.getTransactionCount(node, 'latest')
    const snapshot = (await provider.send('evm_snapshot', [])) as string
    const base = await provider.getBlockNumber()

    const [sent] = await sendConsumerRequests(consumer, deployer, [request])
    const raw = (await provider.send('eth_getRawTransactionByHash', [sent!.txHash])) as string
    const answered = async () =>
      (
        await provider.getLogs({
          address: operatorAddress,
          topics: [responseTopic, sent!.requestId],
          fromBlock: base + 1,
        })
      ).length > 0
    await waitFor('the first answer', answered, 60_000, 50)
    const heldBefore = held()

    // The reorg takes the request away with its answer, and the node looks before the request is
    // made again: the answer's bytes have no request to answer. Sent then (a node that resends what
    // a reorg took away at once), they are mined and revert; held, they wait for the request.
    expect(await provider.send('evm_revert', [snapshot])).toBe(true)
    await provider.send('anvil_dropAllTransactions', [])
    await provider.send('evm_increaseTime', [30])
    await provider.send('evm_mine', [])
    const reorgedAt = await provider.getBlockNumber()
    const minedAfterReorg = await mined()
    await waitFor(
      'the node to decide what to do with the answer the reorg took away',
      async () => held() > heldBefore || (await mined()) > minedAfterReorg,
      60_000,
      50,
    )
    await provider.send('eth_sendRawTransaction', [raw])

    await waitFor('the answer in the new chain', answered, 90_000, 100)
    await waitFor(
      'the node key idle',
      async () =>
        Number(await provider.send('eth_getTransactionCount', [node, 'pending'])) ===
        (await mined()),
      60_000,
      100,
    )
    for (let index = 0; index < 3; index++) await provider.send('evm_mine', [])
    const reverted: string[] = []
    for (let number = reorgedAt; number <= (await provider.getBlockNumber()); number++) {
      const block = await provider.getBlock(number, true)
      for (const tx of block?.prefetchedTransactions ?? []) {
        if (tx.from.toLowerCase() !== node.toLowerCase()) continue
        if ((await provider.getTransactionReceipt(tx.hash))?.status !== 1) reverted.push(tx.hash)
      }
    }
    const responses = await provider.getLogs({
      address: operatorAddress,
      topics: [responseTopic, sent!.requestId],
      fromBlock: reorgedAt,
    })
    expect(responses).toHaveLength(1)
    expect(reverted).toEqual([])
    expect(held()).toBeGreaterThan(heldBefore)
  }, 240_000)
})
