import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { claimKey } from '../../src/dev/prefix-claim.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { scanKeys } from '../../src/queue/scan-keys.ts'
import type { Runners } from '../../src/runner/start.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'
import { connectClient } from '../../src/queue/connection.ts'
import { fairGameOddsRequest, oracleResponsesSince } from '../reliability/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

/**
 * Redis loses its state while the listener's handler runs (a FLUSHALL mid-scan: the request's run
 * record and job go), and the consumed marker is written after it (seed 2047 of the fault search).
 * The marker carries the Redis generation it was written under, so once the runner rebuilds under a
 * new generation it does not count: the request is read again and answered. A marker that counted
 * whatever the generation would keep the request from ever running.
 */
describe('a consumed marker written as Redis lost its state', () => {
  let stack: DevStack
  let runner: Runners | undefined
  let holdFeed = true
  let fetching = false
  const logger = createLogger(parseSettings({ LOG_LEVEL: 'fatal' }), 'consumed-markers')

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('consumed-markers'),
      runner: false,
      feedIntercept: async () => {
        fetching = true
        while (holdFeed) await new Promise((resolve) => setTimeout(resolve, 50))
        return false
      },
    })
  }, 120_000)

  afterAll(async () => {
    holdFeed = false
    await runner?.stop()
    await stack?.stop()
  })

  const startRunner = () =>
    startRunnerFromSettings(stack.settings, logger, { env: { ...process.env, ...stack.env } })

  it('does not keep the rebuild from running its request', async () => {
    const prefix = stack.settings.QUEUE_PREFIX
    const redis = await connectClient(stack.redisUrl)
    try {
      runner = await startRunner()
      const [sent] = await sendConsumerRequests(
        stack.contracts.consumer,
        stack.contracts.deployer,
        [fairGameOddsRequest()],
      )
      const markers = () => scanKeys(redis, `${prefix}:*:consumed:*`)
      await waitFor(
        'the run fetching, its log marked consumed',
        async () => {
          return fetching && (await markers()).length > 0
        },
        60_000,
      )
      await runner.stop()
      runner = undefined
      // Everything of the installation's but the marker goes: the generation, the run record, the
      // request's job, the listener's checkpoint, the sender's records (the dev stack's own claim
      // on its prefix stays: it is not the runner's state).
      const kept = new Set([...(await markers()), claimKey(prefix)])
      const lost = (await scanKeys(redis, `${prefix}:*`)).filter((key) => !kept.has(key))
      if (lost.length > 0) await redis.del(...lost)
      holdFeed = false
      runner = await startRunner()
      const fulfilled = await waitForFulfilments(
        stack.contracts.consumer,
        stack.contracts.provider,
        [sent!.requestId],
        { fromBlock: sent!.blockNumber, timeoutMs: 90_000 },
      )
      expect(fulfilled.size).toBe(1)
      expect(await oracleResponsesSince(stack, sent!.blockNumber)).toBe(1)
    } finally {
      redis.disconnect()
    }
  }, 240_000)
})
