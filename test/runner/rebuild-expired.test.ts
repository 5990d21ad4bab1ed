import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { startHeldFeedStack, type HeldFeedStack } from '../support/held-feed-stack.ts'
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
  let held: HeldFeedStack

  beforeAll(async () => {
    held = await startHeldFeedStack(prefix)
  }, 120_000)

  afterAll(async () => {
    await held?.stop()
    redis.disconnect()
  })

  it('gets its record back, refused with the reason, and is not run', async () => {
    const { provider, operator } = held.stack.contracts
    const sent = await held.requestHeld()
    const { requestId } = sent
    const runs = held.stack.runner!.runs
    // The chain's clock passes the request's cancelExpiration while its fetch is held, and the
    // fetch goes on once the runner's sender reads the chain's time past it (it reads the head at
    // most once a poll interval: before, the fulfilment would go out, still valid on chain).
    const { cancelExpiration } = (await runs.get(requestId))!
    await provider.send('evm_increaseTime', [301])
    await provider.send('evm_mine', [])
    const sender = held.stack.runner!.sender!
    await waitFor(
      'the runner reading the chain past the expiry',
      async () => BigInt(await sender.chainTime()) >= BigInt(cancelExpiration!),
      30_000,
      50,
    )
    held.release()
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
      fromBlock: sent.blockNumber,
    })
    expect(logs.map((log) => operator.interface.parseLog(log)?.name)).not.toContain(
      'OracleResponse',
    )
  }, 120_000)
})
