import { Redis } from 'ioredis'
import { Wallet, type JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { uniquePrefix } from '../support/redis.ts'
import {
  countRevertedFrom,
  expectFulfilledOnce,
  requestsOfCases,
  sendPaced,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'

const NODE_KEYS = [ANVIL_PRIVATE_KEYS[1]!, ANVIL_PRIVATE_KEYS[2]!]
const NODES = NODE_KEYS.map((key) => new Wallet(key).address)
const WAITING_LINE = /the node's pool holds \d+ transaction\(s\) of this runner's keys/

/**
 * Redis loses its state (FLUSHALL) while a fulfilment waits in the node's pool. The rebuild from the
 * chain finds its request open (the fulfilment is not mined yet); run again, it went out from the
 * runner's other key, free at once with nothing pooled: a second fulfilment, reverted, paid for
 * (chaos seed 1194350547). The rebuild reads the chain once the pool's fulfilment is mined.
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
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = (await buildDemoCases(stack, registry.jobs)).filter((demoCase) =>
      demoCase.job.name.includes('game-odds'),
    )
    if (cases.length === 0) throw new Error('no game-odds job in JOBS_DIR')
    runner = await startPart('runner', { ...stack.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'json' })
  }, 180_000)

  afterAll(async () => {
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

  it('the request is answered once, by the fulfilment that was in the pool; nothing reverts', async () => {
    // Both keys have sent before: the runner owns both, each recovered.
    const warmFrom = (await provider.getBlockNumber()) + 1
    const warm = await sendPaced(stack, requestsOfCases(cases, 2))
    await expectFulfilledOnce(stack, cases, warm, warmFrom, { output: () => runner.output() })
    const countsBefore = await minedCounts()

    // The request mined; its fulfilment waits in the pool, and Redis loses everything.
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
    const flusher = new Redis(redis.url)
    await flusher.flushall()
    flusher.disconnect()

    // The runner either waits for the pool (what it says), or sends the request again (a second
    // fulfilment in the pool): the block is mined only once one of the two happened.
    await waitFor(
      'the rebuild waiting for the pool, or a second fulfilment',
      async () => WAITING_LINE.test(runner.output()) || (await pooled()) > 1,
      120_000,
    )
    expect(await pooled()).toBe(1)
    await provider.send('evm_mine', [])
    await provider.send('evm_setAutomine', [true])
    await expectFulfilledOnce(stack, cases, sent, fromBlock, { output: () => runner.output() })

    // A request after the rebuild is answered too: the rebuild's rewind (which delivers the older
    // request first) is behind us, so what the keys sent for the first is all they will send.
    await waitFor(
      'the rebuild done',
      async () => /rebuilt from the chain/.test(runner.output()),
      120_000,
    )
    const laterFrom = (await provider.getBlockNumber()) + 1
    const later = await sendPaced(stack, requestsOfCases(cases, 1))
    await expectFulfilledOnce(stack, cases, later, laterFrom, { output: () => runner.output() })
    const countsAfter = await minedCounts()
    // Two fulfilments in all, the one from the pool and the later one's; none reverted.
    expect(countsAfter[0]! + countsAfter[1]! - countsBefore[0]! - countsBefore[1]!).toBe(2)
    for (const address of NODES)
      expect(await countRevertedFrom(provider, address, fromBlock)).toBe(0)
  }, 400_000)
})
