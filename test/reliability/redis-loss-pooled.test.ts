import { Redis } from 'ioredis'
import { Wallet, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import type { DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { uniquePrefix } from '../support/redis.ts'
import {
  countRevertedFrom,
  expectFulfilledOnce,
  gameOddsCases,
  requestsOfCases,
  sendPaced,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'
import type { SentRequest } from '../../src/dev/requests.ts'

const NODE_KEYS = [ANVIL_PRIVATE_KEYS[1]!, ANVIL_PRIVATE_KEYS[2]!]
const NODES = NODE_KEYS.map((key) => new Wallet(key).address)
const WAITING_LINE =
  /the node's pool holds \d+ transaction\(s\) of the Operators' authorised senders/
const REBUILT_LINE = /rebuilt from the chain/

/**
 * Redis loses its state (FLUSHALL) while a fulfilment waits in the node's pool. The rebuild from the
 * chain finds its request open (the fulfilment is not mined yet); run again, it went out from the
 * runner's other key, free at once with nothing pooled: a second fulfilment, reverted, paid for
 * (chaos seed 1194350547). The rebuild reads the chain once the pool's fulfilment is mined, whichever
 * of the Operator's authorised senders sent it: this runner's key, or another runner's.
 */
describe('Redis lost while a fulfilment waits in the pool, with a second key free', () => {
  let redis: PrivateRedis
  let stack: DevStack
  let runner: PartProcess
  let cases: DemoCase[]
  let provider: JsonRpcProvider

  beforeAll(async () => {
    redis = await startPrivateRedis()
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-loss-pooled'),
      nodeKeys: NODE_KEYS,
      runner: false,
    })
    provider = stack.contracts.provider as JsonRpcProvider
    cases = await gameOddsCases(stack)
    runner = await startPart('runner', { ...stack.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'json' })
  }, 180_000)

  afterAll(async () => {
    await provider?.send('evm_setIntervalMining', [0]).catch(() => undefined)
    await provider?.send('evm_setAutomine', [true]).catch(() => undefined)
    await stopPart(runner)
    await stack?.stop()
    await redis?.stop()
  }, 60_000)

  /** Transactions of the node keys in the node's pool, not mined yet. */
  const pooled = async () => {
    let count = 0
    for (const address of NODES)
      count +=
        Number(await provider.send('eth_getTransactionCount', [address, 'pending'])) -
        (await provider.getTransactionCount(address))
    return count
  }
  const minedCounts = () =>
    Promise.all(NODES.map((address) => provider.getTransactionCount(address)))

  /** Lines of the runner's output matching `pattern`, the process's before it too. */
  const said = (pattern: RegExp) =>
    [...earlierOutput, runner.output()].join('\n').match(new RegExp(pattern, 'g'))?.length ?? 0
  const earlierOutput: string[] = []

  /**
   * One request mined while its fulfilment waits in the pool (automine off), then Redis flushed; ends
   * once the runner says it waits for the pool before it reads the chain, or a second fulfilment
   * reached the pool. `around`: what happens once the fulfilment is pooled, before and after the flush.
   */
  async function flushWithFulfilmentPooled(around?: {
    beforeFlush: () => Promise<void>
    afterFlush: () => Promise<void>
  }): Promise<{ sent: SentRequest[]; fromBlock: number }> {
    const waitingBefore = said(WAITING_LINE)
    await provider.send('evm_setAutomine', [false])
    const fromBlock = (await provider.getBlockNumber()) + 1
    const sending = sendPaced(stack, requestsOfCases(cases, 1))
    const deployer = await stack.contracts.deployer.getAddress()
    await waitFor(
      'the request in the pool',
      async () =>
        Number(await provider.send('eth_getTransactionCount', [deployer, 'pending'])) >
        (await provider.getTransactionCount(deployer)),
      120_000,
    )
    await provider.send('evm_mine', [])
    const sent = await sending
    await waitFor(
      "the runner's fulfilment in the pool",
      async () => (await pooled()) === 1,
      120_000,
    )
    await around?.beforeFlush()
    const flusher = new Redis(redis.url)
    await flusher.flushall()
    flusher.disconnect()
    await around?.afterFlush()
    // The block is mined only once the runner waits for the pool (what it says), or sent the
    // request again (a second fulfilment in the pool).
    await waitFor(
      'the rebuild waiting for the pool, or a second fulfilment',
      async () => said(WAITING_LINE) > waitingBefore || (await pooled()) > 1,
      120_000,
    )
    expect(await pooled()).toBe(1)
    return { sent, fromBlock }
  }

  /** Mines what is pooled and goes back to a block per transaction. */
  async function mineAgain(): Promise<void> {
    await provider.send('evm_mine', [])
    await provider.send('evm_setAutomine', [true])
  }

  /**
   * A request after the chain was read again, answered: the rewind (or a first start's read of the
   * last 24 hours) delivered the older requests before it. `rebuiltBefore`: wait for a rebuild first.
   */
  async function answeredAfterReading(rebuiltBefore?: number): Promise<void> {
    if (rebuiltBefore !== undefined)
      await waitFor('the rebuild done', async () => said(REBUILT_LINE) > rebuiltBefore, 120_000)
    const laterFrom = (await provider.getBlockNumber()) + 1
    const later = await sendPaced(stack, requestsOfCases(cases, 1))
    await expectFulfilledOnce(stack, cases, later, laterFrom, { output: () => runner.output() })
  }

  /**
   * The pooled request answered once, then a later one: two fulfilments of the keys in all since
   * `countsBefore` (the one from the pool and the later one's), none reverted.
   */
  async function expectAnsweredOnce(
    pooledRequest: { sent: SentRequest[]; fromBlock: number },
    countsBefore: number[],
    rebuiltBefore?: number,
  ): Promise<void> {
    const { sent, fromBlock } = pooledRequest
    await expectFulfilledOnce(stack, cases, sent, fromBlock, { output: () => runner.output() })
    await answeredAfterReading(rebuiltBefore)
    const countsAfter = await minedCounts()
    expect(countsAfter[0]! + countsAfter[1]! - countsBefore[0]! - countsBefore[1]!).toBe(2)
    for (const address of NODES)
      expect(await countRevertedFrom(provider, address, fromBlock)).toBe(0)
  }

  it('the request is answered once, by the fulfilment that was in the pool; nothing reverts', async () => {
    // Both keys have sent before: the runner owns both, each recovered.
    const warmFrom = (await provider.getBlockNumber()) + 1
    const warm = await sendPaced(stack, requestsOfCases(cases, 2))
    await expectFulfilledOnce(stack, cases, warm, warmFrom, { output: () => runner.output() })
    const countsBefore = await minedCounts()
    const rebuiltBefore = said(REBUILT_LINE)

    const { sent, fromBlock } = await flushWithFulfilmentPooled()
    await mineAgain()
    await expectAnsweredOnce({ sent, fromBlock }, countsBefore, rebuiltBefore)
  }, 400_000)

  it('a runner stopped while its rebuild waits for the pool exits at once, with code 0; the next one answers once', async () => {
    const countsBefore = await minedCounts()
    const { sent, fromBlock } = await flushWithFulfilmentPooled()
    // SIGTERM, and SIGKILL 12 s later: the wait for the pool is 120 s, so only a wait the stop
    // ends lets the runner exit by itself.
    await runner.stop()
    expect(await runner.exited).toEqual({ code: 0, signal: null })
    earlierOutput.push(runner.output())
    await mineAgain()
    // The next runner finds no generation (nobody adopted one since the flush) and no checkpoint:
    // as a first start, it reads the last 24 hours, where the pooled fulfilment is mined now.
    runner = await startPart('runner', { ...stack.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'json' })
    await expectAnsweredOnce({ sent, fromBlock }, countsBefore)
  }, 400_000)

  it("another runner's key sent the pooled fulfilment: a runner starting with no checkpoint waits for it too", async () => {
    const countsBefore = await minedCounts()
    await runner.stop()
    earlierOutput.push(runner.output())
    // One runner per key: the request goes to key 0's runner, which dies with its fulfilment pooled.
    const keyed = (key: string) => ({
      ...stack.env,
      NODE_PRIVATE_KEY: key,
      NODE_PRIVATE_KEYS: key,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
    })
    runner = await startPart('runner', keyed(NODE_KEYS[0]!))
    const { sent, fromBlock } = await flushWithFulfilmentPooled({
      beforeFlush: async () => {
        await runner.stop('SIGKILL')
        earlierOutput.push(runner.output())
      },
      // Key 1's runner starts on the flushed Redis: no checkpoint, so it reads the last 24 hours,
      // where the request looks open until key 0's fulfilment is mined. It knows key 0 only as
      // one of the Operator's authorised senders.
      afterFlush: async () => {
        runner = await startPart('runner', keyed(NODE_KEYS[1]!))
      },
    })
    await mineAgain()
    await expectAnsweredOnce({ sent, fromBlock }, countsBefore)
  }, 400_000)

  /**
   * A key's owner dies with two fulfilments sent, the lower one lost on its way (the node never got
   * it: the higher one waits queued behind the gap, counted by no transaction count), and Redis
   * loses what it recorded. The key's next owner read its nonce at the gap and spent it, which let
   * the queued fulfilment be mined beside a second answer of its request, reverted. It now reads the
   * pool, fills the gap, lets the queued one be mined, and only then are the requests read again.
   */
  it('a fulfilment queued behind a nonce the node never got: the gap is filled, nothing is answered twice', async () => {
    await runner.stop()
    earlierOutput.push(runner.output())
    const keyed = (keys: string[]) => ({
      ...stack.env,
      NODE_PRIVATE_KEY: keys[0]!,
      NODE_PRIVATE_KEYS: keys.join(','),
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
    })
    runner = await startPart('runner', keyed([NODE_KEYS[0]!]))
    // Two requests mined while automine is off; key 0's runner sends both fulfilments to the pool.
    await provider.send('evm_setAutomine', [false])
    const fromBlock = (await provider.getBlockNumber()) + 1
    const deployer = await stack.contracts.deployer.getAddress()
    const sending = sendPaced(stack, requestsOfCases(cases, 2))
    await waitFor(
      'the two requests in the pool',
      async () =>
        Number(await provider.send('eth_getTransactionCount', [deployer, 'pending'])) >=
        (await provider.getTransactionCount(deployer)) + 2,
      120_000,
    )
    await provider.send('evm_mine', [])
    const sent = await sending
    await waitFor(
      "the runner's two fulfilments in the pool",
      async () => (await pooled()) === 2,
      120_000,
    )
    // Its owner dies, the lower one never reached the node (dropped from the pool: the higher one
    // waits queued behind the gap), and Redis loses what the runner recorded.
    await runner.stop('SIGKILL')
    earlierOutput.push(runner.output())
    const mined = await provider.getTransactionCount(NODES[0]!)
    const content = (await provider.send('txpool_content', [])) as {
      pending: Record<string, Record<string, { hash: string }>>
    }
    const own = Object.entries(content.pending).find(
      ([from]) => from.toLowerCase() === NODES[0]!.toLowerCase(),
    )![1]
    // As a lost broadcast leaves it: the pool empty of the key, then only the higher one sent, queued.
    const higher = (await provider.send('eth_getRawTransactionByHash', [
      own[String(mined + 1)]!.hash,
    ])) as string
    await provider.send('anvil_removePoolTransactions', [NODES[0]!])
    await provider.send('eth_sendRawTransaction', [higher])
    const status = (await provider.send('txpool_status', [])) as { queued: string }
    expect(Number(status.queued)).toBe(1)
    const flusher = new Redis(redis.url)
    await flusher.flushall()
    flusher.disconnect()
    // A block a second, as on a chain with block times: what the new runner sends as it starts
    // meets in the pool what was there before it, as on a live chain.
    await provider.send('evm_setIntervalMining', [1])
    // Both keys' runner starts on the flushed Redis: no checkpoint, both requests look open.
    runner = await startPart('runner', keyed(NODE_KEYS))
    await expectFulfilledOnce(stack, cases, sent, fromBlock, { output: () => runner.output() })
    await answeredAfterReading()
    // Then a block per transaction again: whatever is still queued of the keys would be mined now.
    await provider.send('evm_setIntervalMining', [0])
    await mineAgain()
    await answeredAfterReading()
    for (const address of NODES)
      expect(await countRevertedFrom(provider, address, fromBlock)).toBe(0)
  }, 400_000)
})
