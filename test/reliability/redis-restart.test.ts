import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { redisAnswers, startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type ConsumerRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { uniquePrefix } from '../support/redis.ts'
import { settlesWithin } from '../support/settles-within.ts'
import { onChainFulfilments, recordFigures, runsNotFulfilled, wrongValues } from './support.ts'

const REQUESTS = 100
const DOWN_MS = 5_000

/**
 * Redis restart under load: a private Redis with persistence (AOF, as production runs it) is stopped
 * for 5 s in the middle of 100 requests (half of them made while it is down) and started again on the
 * same port and data directory. The adapter, fetch workers, listener, pipeline worker and sender
 * reconnect by themselves.
 */
describe('Redis restart under load', () => {
  let redis: PrivateRedis
  let stack: DevStack
  let cases: DemoCase[]
  /** Set by the last test, which checks the stop itself. */
  let stopping: Promise<void> | undefined
  const persistDir = mkdtempSync(join(tmpdir(), 'feedrunner-redis-aof-'))

  beforeAll(async () => {
    redis = await startPrivateRedis({ persistDir })
    stack = await startDevStack({
      env: {
        ...process.env,
        REDIS_URL: redis.url,
        LOG_LEVEL: 'fatal',
        EA_PORT: '',
        RUNNER_LOCK_MS: '5000',
      },
      prefix: uniquePrefix('rel-redis'),
    })
    cases = await buildDemoCases(stack, stack.runner!.registry.jobs)
  }, 120_000)

  afterAll(async () => {
    if (!stopping) await stack?.stop()
    await redis?.stop()
  }, 60_000)

  it(`fulfils all ${REQUESTS} requests although Redis is down for ${DOWN_MS / 1000} s in the middle`, async () => {
    const { consumer, provider, deployer } = stack.contracts
    const nodeKey = stack.env.NODE_PRIVATE_KEY!
    const nonceBefore = await provider.getTransactionCount(new Wallet(nodeKey).address)
    const fromBlock = (await provider.getBlockNumber()) + 1
    const requests: ConsumerRequest[] = Array.from({ length: REQUESTS }, (_, index) => {
      const demoCase = cases[index % cases.length]!
      return {
        externalJobId: demoCase.job.externalJobId,
        valueType: demoCase.shape.answerType,
        params: demoCase.params,
        payment: demoCase.minimumPayment ?? 0n,
      }
    })
    // Half the requests go out first; Redis stops once a third of all are fulfilled, and the other
    // half goes out while it is down. So the outage always meets open requests, however fast the
    // first half is served (the whole 100 sent at once were all fulfilled before a first look).
    const firstHalf = requests.slice(0, REQUESTS / 2)
    const secondHalf = requests.slice(REQUESTS / 2)
    let fulfilledCount = 0
    let fulfilledWhenStopped = -1
    const waitForAll = (sentNow: readonly { requestId: string }[]) =>
      waitForFulfilments(
        consumer,
        provider,
        sentNow.map((request) => request.requestId),
        { fromBlock, timeoutMs: 150_000, onFulfilled: () => void fulfilledCount++ },
      )
    const sentFirst = await sendConsumerRequests(consumer, deployer, firstHalf)
    const fulfilledFirst = waitForAll(sentFirst)
    await waitFor(
      'a third of the requests fulfilled',
      async () => fulfilledCount >= REQUESTS / 3,
      90_000,
      20,
    )
    fulfilledWhenStopped = fulfilledCount
    await redis.stop()
    expect(await redisAnswers(redis.url)).toBe(false)
    const downSince = Date.now()
    const sentSecond = await sendConsumerRequests(consumer, deployer, secondHalf)
    expect(await redisAnswers(redis.url)).toBe(false)
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, DOWN_MS - (Date.now() - downSince))),
    )
    redis = await startPrivateRedis({ port: redis.port, persistDir })
    const sent = [...sentFirst, ...sentSecond]
    const fulfilled = new Map([...(await fulfilledFirst), ...(await waitForAll(sentSecond))])
    expect(fulfilled.size).toBe(REQUESTS)
    expect(await wrongValues(cases, sent, fulfilled)).toEqual([])
    const chain = await onChainFulfilments(stack, fromBlock, nodeKey, nonceBefore)
    expect(chain).toEqual({
      responses: REQUESTS,
      uniqueResponses: REQUESTS,
      nonceDelta: REQUESTS,
      reverted: 0,
    })
    const ids = sent.map((request) => request.requestId)
    expect(await runsNotFulfilled(stack, ids, 30_000)).toEqual([])
    recordFigures('redis-restart', {
      requests: REQUESTS,
      redisDownMs: DOWN_MS,
      fulfilledBeforeOutage: fulfilledWhenStopped,
      fulfilled: fulfilled.size,
      oracleResponses: chain.responses,
      nodeTransactions: chain.nonceDelta,
      reverted: chain.reverted,
    })
  }, 200_000)

  it('stops within 30 s after the Redis restart', async () => {
    // Workers whose connections were still waiting to reconnect once hung their close for good.
    stopping = stack.stop()
    expect(
      await settlesWithin(
        stopping.then(() => 'stopped'),
        30_000,
      ),
    ).toBe('stopped')
  }, 40_000)
})
