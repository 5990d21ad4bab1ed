import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

/**
 * Redis is a cache of the chain: a request past its cancelExpiration that is still open (refused, not
 * run) keeps its run record through a loss of Redis's state, rebuilt from the chain. The fault search
 * found it (seed 2001: a cancel storm moved the chain's clock past two requests' expiry, then a
 * FLUSHALL): the rebuild read only the requests not yet expired, and those two were open on chain with
 * no record of why.
 */
describe('a refused, expired request after Redis lost its state', () => {
  const prefix = uniquePrefix('rebuild-expired')
  const redis = new Redis(testRedisUrl())
  let stack: DevStack
  let odds: DemoCase
  let releaseFeed: () => void = () => undefined
  let holdNext = false
  let feedHeld = false

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix,
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
    redis.disconnect()
  })

  it('gets its record back, refused with the reason, and is not run', async () => {
    const { consumer, deployer, provider, operator } = stack.contracts
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
    // The chain's clock passes the request's cancelExpiration while its fetch is held.
    await provider.send('evm_increaseTime', [301])
    await provider.send('evm_mine', [])
    releaseFeed()
    await waitFor(
      'the run refused',
      async () => (await runs.get(requestId))?.state === 'refused',
      30_000,
      50,
    )

    // Redis loses this stack's state (its own keys: the test Redis is shared), generation included.
    const keys = (await redis.keys(`${prefix}:*`)).filter((key) => !key.endsWith(':dev-stack'))
    await redis.del(...keys)
    expect(await runs.get(requestId)).toBeUndefined()

    // A hang catcher only: the runner checks its generation every poll interval.
    await waitFor(
      'the record rebuilt',
      async () => (await runs.get(requestId)) !== undefined,
      60_000,
    )
    const run = await runs.get(requestId)
    expect(run?.state).toBe('refused')
    expect(run?.reason).toMatch(/^the request passed its cancelExpiration at /)
    expect(run?.failure?.kind).toBe('bad_input')
    expect(run?.tasks ?? []).toHaveLength(0)
    // From the chain: still open, never answered.
    const logs = await provider.getLogs({
      address: await operator.getAddress(),
      topics: [null, requestId],
      fromBlock: sent!.blockNumber,
    })
    expect(logs.map((log) => operator.interface.parseLog(log)?.name)).not.toContain(
      'OracleResponse',
    )
  }, 120_000)
})
