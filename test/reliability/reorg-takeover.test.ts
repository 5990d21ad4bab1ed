import { Wallet, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  fairGameOddsRequest,
  oracleResponsesOf,
  revertedOnceIdle,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'

const HELD_LINE = /so it is held until the request is back/

/**
 * A reorg takes a request away with its fulfilment; the key's owner holds the fulfilment's bytes
 * (their request is not on chain) and is stopped; another runner takes the key over and finds those
 * bytes among the key's in-flight transactions. Sent again as they are, they revert: at once while
 * the request is gone, or beside the new answer once the request is made again in a later block (its
 * cancelExpiration changed). The new owner must ask the same resend guard as the old one did.
 * Without that (a takeover resending every recorded attempt) the node pays for a revert here.
 */
describe('reorgs: a key taken over while it holds the answer of a request the reorg took away', () => {
  let stack: DevStack
  let provider: JsonRpcProvider
  const runners: PartProcess[] = []

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-reorg-takeover'),
      runner: false,
    })
    provider = stack.contracts.provider as JsonRpcProvider
  }, 120_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await stack?.stop()
  }, 60_000)

  const node = () => new Wallet(stack.env.NODE_PRIVATE_KEY!).address
  const mined = () => provider.getTransactionCount(node(), 'latest')
  const startRunner = async () => {
    const runner = await startPart('runner', { ...stack.env, LOG_LEVEL: 'warn' })
    runners.push(runner)
    return runner
  }

  it('the new owner holds the bytes too, and the request is answered once with no revert', async () => {
    const { consumer, deployer } = stack.contracts
    const first = await startRunner()
    const snapshot = (await provider.send('evm_snapshot', [])) as string
    const base = await provider.getBlockNumber()
    const [sent] = await sendConsumerRequests(consumer, deployer, [fairGameOddsRequest()])
    const raw = (await provider.send('eth_getRawTransactionByHash', [sent!.txHash])) as string
    const answers = (fromBlock: number) => oracleResponsesOf(stack, sent!.requestId, fromBlock)
    await waitFor('the first answer', async () => (await answers(base + 1)).length > 0, 60_000, 50)

    // The reorg: back to before the request, the answer dropped with the old chain, 30 s on.
    expect(await provider.send('evm_revert', [snapshot])).toBe(true)
    await provider.send('anvil_dropAllTransactions', [])
    await provider.send('evm_increaseTime', [30])
    await provider.send('evm_mine', [])
    const reorgedAt = await provider.getBlockNumber()
    const minedAfterReorg = await mined()
    await waitFor(
      'the owner to hold the answer',
      async () => HELD_LINE.test(first.output()),
      90_000,
    )
    await stopPart(first)

    const second = await startRunner()
    await waitFor(
      'the new owner to decide what to do with the held answer',
      async () => HELD_LINE.test(second.output()) || (await mined()) > minedAfterReorg,
      90_000,
      100,
    )
    // The request made again, in a later block than the one its old answer was signed for.
    await provider.send('eth_sendRawTransaction', [raw])
    await waitFor(
      'the answer in the new chain',
      async () => (await answers(reorgedAt)).length > 0,
      90_000,
      100,
    )
    expect(await revertedOnceIdle(provider, node(), reorgedAt)).toBe(0)
    expect(await answers(reorgedAt)).toHaveLength(1)
    expect(await consumer.getFunction('isFulfilled')(sent!.requestId)).toBe(true)
  }, 300_000)
})
