import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { createPollLoop } from '../../src/chain/sender/poll-loop.ts'
import { createTxSender, type TxSender } from '../../src/chain/sender/index.ts'
import type { Head } from '../../src/chain/sender/model.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { fulfilUint256, makeRequests, rpc, startTestChain, type TestChain } from './support.ts'

const HEAD: Head = { number: 1, hash: '0x01', baseFee: 1n, timestamp: 0 }

// A sender with nothing to watch reads no head: a runner waiting for requests would otherwise ask the
// node for its latest block every poll interval for nobody. The fees it signs with after such a
// pause come from a head read then, not from the head it last read.
describe('the sender poll loop', () => {
  it('reads no head while no key has work, and reads again once one has', async () => {
    let work = false
    let asked = 0
    let reads = 0
    let checks = 0
    const loop = createPollLoop(
      async () => {
        reads++
        return HEAD
      },
      async () => {
        checks++
      },
      1,
      (error) => {
        throw error
      },
      () => {
        asked++
        return work
      },
    )
    loop.start()
    try {
      // Twenty turns of the loop with nothing to watch (counted by its own question), however slow.
      await waitFor('twenty idle turns', async () => asked >= 20, 30_000, 5)
      expect(reads).toBe(0)
      expect(checks).toBe(0)
      work = true
      await waitFor('a look at the chain', async () => checks >= 3, 30_000, 5)
      expect(reads).toBeGreaterThanOrEqual(3)
    } finally {
      await loop.stop()
    }
  })
})

describe('a sender after an idle spell (anvil, automine)', () => {
  const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
  let chain: TestChain
  let sender: TxSender

  beforeAll(async () => {
    chain = await startTestChain({ countCalls: true })
    sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('sender-idle'),
      pollIntervalMs: 20,
      // A mined fulfilment is final at once: on an automining chain no block comes while idle, and a
      // watch until CHAIN_FINALITY_DEPTH would read heads for good (sender-reorg.test.ts covers it).
      finalityDepth: 1,
    })
    await sender.start()
  })
  afterAll(async () => {
    await sender?.close()
    await chain?.stop()
  })

  const fulfil = async (value: bigint) => {
    const [request] = await makeRequests(chain, 1)
    return sender.submit(
      {
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request!, value),
        idempotencyKey: request!.requestId,
      },
      30_000,
    )
  }
  const served = (method: string) => chain.anvil.calls()?.[method] ?? 0
  /**
   * The calls anvil served so far, once its log has caught up: anvil logs calls in the order it
   * serves them, so once a marker call of ours is counted, every call before it is too.
   */
  const headReadsServed = async () => {
    const markers = served('web3_clientVersion')
    await rpc(chain.dev.provider, 'web3_clientVersion')
    await waitFor('anvil logged the marker', async () => served('web3_clientVersion') > markers)
    return served('eth_getBlockByNumber')
  }

  it('asks the node for no block while it has nothing to watch', async () => {
    expect((await fulfil(1n)).status).toBe('mined')
    await waitFor('nothing pending', async () => sender.stats()[0]!.pending === 0, 30_000)
    const before = await headReadsServed()
    // Fifty poll intervals. On a loaded machine fewer turns run, which can only let this pass
    // wrongly, never fail a correct sender; the poll loop's own test counts its turns.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect((await headReadsServed()) - before).toBe(0)
  })

  it('signs with the base fee of a head read after the pause, so a risen fee does not strand it', async () => {
    await waitFor('nothing pending', async () => sender.stats()[0]!.pending === 0, 30_000)
    // The base fee jumps from under 1 gwei to 100 gwei while the sender reads no head.
    const provider = chain.dev.provider
    await rpc(provider, 'anvil_setNextBlockBaseFeePerGas', [`0x${(100n * 10n ** 9n).toString(16)}`])
    await rpc(provider, 'evm_mine')
    const latest = await rpc<{ baseFeePerGas: string }>(provider, 'eth_getBlockByNumber', [
      'latest',
      false,
    ])
    expect(BigInt(latest.baseFeePerGas)).toBe(100n * 10n ** 9n)
    // Past the age (two poll intervals) at which the sender's last head counts as recent: an idle
    // sender reads no head meanwhile, so waiting longer only makes the head it holds older.
    await new Promise((resolve) => setTimeout(resolve, 200))

    const result = await fulfil(2n)
    expect(result.status).toBe('mined')
    const tx = await rpc<{ maxFeePerGas: string }>(provider, 'eth_getTransactionByHash', [
      result.txHash,
    ])
    expect(BigInt(tx.maxFeePerGas)).toBeGreaterThanOrEqual(100n * 10n ** 9n)
    expect(sender.stats()[0]!.bumped).toBe(0)
  })
})
