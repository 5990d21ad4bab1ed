import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { sendConsumerRequests } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { WORKER_IDLE_WAIT_SECONDS } from '../../src/queue/factories.ts'
import { uniquePrefix } from '../support/redis.ts'
import { expectFulfilledOnce } from './support.ts'

/** The BullMQ workers of the dev stack: one per feed family and the chain's `requests` worker. */
const WORKERS = 5
const WATCHED_SECONDS = 12

/**
 * What an idle installation costs Redis, and that the cost cut loses nothing: each idle BullMQ worker
 * blocks for WORKER_IDLE_WAIT_SECONDS on its queue's marker (BullMQ's 5 s made the five workers
 * 7-8 of an idle installation's 20 commands a second), and still takes a job at once, also the
 * first after Redis restarted under it.
 */
describe('idle workers', () => {
  let redis: PrivateRedis
  let stack: DevStack
  let cases: DemoCase[]
  const persistDir = mkdtempSync(join(tmpdir(), 'feedrunner-idle-workers-'))

  beforeAll(async () => {
    redis = await startPrivateRedis({ persistDir })
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'fatal', EA_PORT: '' },
      prefix: uniquePrefix('rel-idle'),
    })
    cases = await buildDemoCases(stack, stack.runner!.registry.jobs)
  }, 120_000)

  afterAll(async () => {
    await stack?.stop()
    await redis?.stop()
  }, 60_000)

  async function blockingWaits(): Promise<number> {
    const client = new Redis(redis.url)
    try {
      const stats = await client.info('commandstats')
      return Number(/cmdstat_bzpopmin:calls=(\d+)/.exec(stats)?.[1] ?? 0)
    } finally {
      client.disconnect()
    }
  }

  it(`makes each idle worker wait ${WORKER_IDLE_WAIT_SECONDS} s at a time, not BullMQ's 5 s`, async () => {
    expect(WORKER_IDLE_WAIT_SECONDS).toBeGreaterThan(WATCHED_SECONDS)
    const before = await blockingWaits()
    await new Promise((resolve) => setTimeout(resolve, WATCHED_SECONDS * 1_000))
    // At most one wait a worker ends in the stretch (the one under way when it began): at BullMQ's
    // 5 s each would end two or three. A slower machine only makes fewer.
    expect((await blockingWaits()) - before).toBeLessThanOrEqual(WORKERS)
  }, 60_000)

  it('takes the first request after Redis restarted under the idle workers at once, not after their wait', async () => {
    await redis.stop()
    redis = await startPrivateRedis({ port: redis.port, persistDir })
    const { consumer, provider, deployer } = stack.contracts
    const fromBlock = (await provider.getBlockNumber()) + 1
    const demoCase = cases[0]!
    const sent = await sendConsumerRequests(consumer, deployer, [
      {
        externalJobId: demoCase.job.externalJobId,
        valueType: demoCase.shape.answerType,
        params: demoCase.params,
        payment: demoCase.minimumPayment ?? 0n,
      },
    ])
    // The bound is under the workers' wait: a worker deaf until its wait ran out fails here, and a
    // slow machine still answers one request in a fraction of it.
    await expectFulfilledOnce(stack, [demoCase], sent, fromBlock, {
      timeoutMs: (WORKER_IDLE_WAIT_SECONDS * 1_000 * 2) / 3,
    })
  }, 120_000)
})
