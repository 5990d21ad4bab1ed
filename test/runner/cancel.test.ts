import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

/**
 * A request its requester cancels while its run is in progress (its fetch held by the feed service):
 * the fulfilment is simulated just before it would be signed, the simulation finds the request
 * cancelled, and nothing is sent. The run says cancelled, as the chain does.
 */
describe('a request cancelled while its run is in progress', () => {
  let stack: DevStack
  let odds: DemoCase
  let releaseFeed: () => void = () => undefined
  /** Set by the test: the next feed call is held until released. */
  let holdNext = false
  let feedHeld = false

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('cancel'),
      feedIntercept: async () => {
        if (!holdNext) return false
        holdNext = false
        feedHeld = true
        await new Promise<void>((resolve) => (releaseFeed = resolve))
        return false
      },
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    odds = (await buildDemoCases(stack, registry.jobs)).find((demoCase) =>
      demoCase.job.name.includes('game-odds'),
    )!
  }, 120_000)

  afterAll(async () => {
    releaseFeed()
    await stack?.stop()
  })

  it('sends no fulfilment, pays no gas, and records the run cancelled', async () => {
    const { consumer, deployer, provider, operator } = stack.contracts
    const node = new Wallet(stack.env.NODE_PRIVATE_KEY!).address
    const nonceBefore = await provider.getTransactionCount(node)
    holdNext = true
    const [sent] = await sendConsumerRequests(consumer, deployer, [
      {
        externalJobId: odds.job.externalJobId,
        valueType: odds.shape.answerType,
        params: odds.params,
        payment: 0n,
      },
    ])
    const { requestId } = sent!
    const runs = stack.runner!.runs
    await waitFor('the run fetching', async () => feedHeld, 30_000, 20)
    expect((await runs.get(requestId))?.state).toBe('running')
    // The Operator lets the requester cancel after its five minutes: chain time, not the clock.
    const record = (await runs.get(requestId))!
    await provider.send('evm_increaseTime', [301])
    await provider.send('evm_mine', [])
    const cancelled = await (
      await consumer.getFunction('cancelRequest')(requestId, BigInt(record.cancelExpiration!))
    ).wait()
    releaseFeed()
    await waitFor(
      'the run final',
      async () => (await runs.get(requestId))?.state === 'cancelled',
      30_000,
      50,
    )
    // From the chain: the cancel is there, no answer, and the node key sent nothing.
    const operatorAddress = await operator.getAddress()
    const logs = await provider.getLogs({
      address: operatorAddress,
      topics: [null, requestId],
      fromBlock: sent!.blockNumber,
    })
    const names = logs.map((log) => operator.interface.parseLog(log)?.name)
    expect(names).toContain('CancelOracleRequest')
    expect(names).not.toContain('OracleResponse')
    expect(await provider.getTransactionCount(node)).toBe(nonceBefore)
    expect(cancelled?.status).toBe(1)
    const run = await runs.get(requestId)
    expect(run?.state).toBe('cancelled')
    expect(run?.txHash).toBeUndefined()
  }, 90_000)
})
