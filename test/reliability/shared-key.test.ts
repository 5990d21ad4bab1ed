import { Wallet, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import type { DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
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

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]!

interface PoolTx {
  nonce: string
  hash: string
  maxFeePerGas?: string
  maxPriorityFeePerGas?: string
}

/** The node key's transactions in anvil's pool, by nonce (anvil's `txpool_content`). */
async function pendingOf(provider: JsonRpcProvider, address: string): Promise<PoolTx[]> {
  const pool = (await provider.send('txpool_content', [])) as {
    pending: Record<string, Record<string, PoolTx>>
  }
  const own = Object.entries(pool.pending).find(
    ([from]) => from.toLowerCase() === address.toLowerCase(),
  )
  return Object.values(own?.[1] ?? {}).sort((a, b) => Number(a.nonce) - Number(b.nonce))
}

/**
 * An operator's node key is also used outside feedrunner (a wallet, a script, a second node: what
 * Chainlink's docs warn against, and what strangers do anyway). A transaction sent by hand spends a
 * nonce the runner counted on, before its fulfilments or in place of one waiting in the pool. The
 * runner reads the chain, not its own counter: every request is still fulfilled once, none reverts,
 * and the stranger's transaction is mined as sent.
 */
describe('a node key also used outside feedrunner', () => {
  let stack: DevStack
  let runner: PartProcess
  let cases: DemoCase[]
  let provider: JsonRpcProvider
  let stranger: Wallet

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-shared-key'),
      nodeKeys: [NODE_KEY],
      runner: false,
    })
    provider = stack.contracts.provider as JsonRpcProvider
    // The same key, in another program: its own nonce counter, read from the node.
    stranger = new Wallet(NODE_KEY, provider)
    cases = await gameOddsCases(stack)
    runner = await startPart('runner', { ...stack.env, LOG_LEVEL: 'warn' })
  }, 180_000)

  afterAll(async () => {
    await provider?.send('evm_setAutomine', [true]).catch(() => undefined)
    await stopPart(runner)
    await stack?.stop()
  }, 60_000)

  it('transactions sent by hand while the runner idles: the next requests are fulfilled once', async () => {
    // The runner has sent before, so it has a nonce of its own to count on.
    const warmFrom = (await provider.getBlockNumber()) + 1
    const warm = await sendPaced(stack, requestsOfCases(cases, 2))
    const warmed = await waitForFulfilments(
      stack.contracts.consumer,
      provider,
      warm.map((request) => request.requestId),
      { fromBlock: warmFrom, timeoutMs: 120_000 },
    )
    expect(warmed.size).toBe(2)
    // Three transactions by hand: the key's nonce moves three past what the runner last used.
    for (let i = 0; i < 3; i++) {
      const receipt = await (
        await stranger.sendTransaction({ to: stranger.address, value: 0n })
      ).wait()
      expect(receipt?.status).toBe(1)
    }
    const nonceBefore = await provider.getTransactionCount(stranger.address)
    const fromBlock = (await provider.getBlockNumber()) + 1
    const sent = await sendPaced(stack, requestsOfCases(cases, 10))
    await expectFulfilledOnce(stack, cases, sent, fromBlock, { output: () => runner.output() })
    // One transaction a request: the nonces the runner signed twice were refused, never mined.
    expect((await provider.getTransactionCount(stranger.address)) - nonceBefore).toBe(10)
    expect(await countRevertedFrom(provider, stranger.address, fromBlock)).toBe(0)
  }, 300_000)

  it('a transaction by hand replaces a fulfilment waiting in the pool: that request is fulfilled again, once', async () => {
    const nonceBefore = await provider.getTransactionCount(stranger.address)
    await provider.send('evm_setAutomine', [false])
    const fromBlock = (await provider.getBlockNumber()) + 1
    // The requests wait in the pool, then are mined in one block.
    const sending = sendPaced(stack, requestsOfCases(cases, 5))
    await waitFor(
      'the five requests in the pool',
      async () =>
        (await pendingOf(provider, await stack.contracts.deployer.getAddress())).length === 5,
      120_000,
    )
    await provider.send('evm_mine', [])
    const sent = await sending
    // The runner's five fulfilments wait in the pool, none mined.
    let pending: PoolTx[] = []
    await waitFor(
      "the runner's five fulfilments in anvil's pool",
      async () => (pending = await pendingOf(provider, stranger.address)).length === 5,
      120_000,
    )
    const first = pending[0]!
    expect(Number(first.nonce)).toBe(nonceBefore)
    // The stranger spends the first of their nonces, paying more, so the pool keeps theirs.
    const fee = BigInt(first.maxFeePerGas ?? '0') * 3n + 1_000_000_000n
    const own = await stranger.sendTransaction({
      to: stranger.address,
      value: 0n,
      nonce: nonceBefore,
      maxFeePerGas: fee,
      maxPriorityFeePerGas: fee,
    })
    await provider.send('evm_setAutomine', [true])
    await provider.send('evm_mine', [])
    const ownReceipt = await provider.waitForTransaction(own.hash, 1, 120_000)
    expect(ownReceipt?.status).toBe(1)
    // From the chain: one OracleResponse each; six transactions of the key, the stranger's and five
    // of the runner's (four from the pool, the replaced one sent again); none reverted.
    await expectFulfilledOnce(stack, cases, sent, fromBlock, { output: () => runner.output() })
    expect((await provider.getTransactionCount(stranger.address)) - nonceBefore).toBe(6)
    expect(await countRevertedFrom(provider, stranger.address, fromBlock)).toBe(0)
    // Said once, naming the nonce and the key (a public address; the key itself never).
    const said = runner
      .output()
      .match(
        new RegExp(
          `nonce ${nonceBefore} of ${stranger.address} was spent by a transaction this installation did not record`,
          'gi',
        ),
      )
    expect(said).toHaveLength(1)
    expect(runner.output()).not.toContain(NODE_KEY.slice(2))
  }, 300_000)
})
