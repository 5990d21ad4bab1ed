import { Redis } from 'ioredis'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import { waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { uniquePrefix } from '../support/redis.ts'
import {
  onChainFulfilments,
  oracleResponsesSince,
  readRuns,
  requestsOfCases,
  sendPaced,
  recordFigures,
  startPart,
  stopPart,
  wrongValues,
  type PartProcess,
} from './support.ts'

const LOST_LINE = /Redis lost its state/g

/**
 * Redis is a cache of the chain: it loses everything (FLUSHALL, or an empty instance put in its place)
 * in the middle of the load, with two runner processes serving one Operator. Every request must still
 * be fulfilled exactly once, as the chain tells (the Operator's OracleResponse logs, the node's
 * transactions and their receipts), and each runner says once that it rebuilt.
 */
describe('total Redis loss: two runners rebuild from the chain', () => {
  let redis: PrivateRedis
  let stack: DevStack
  let cases: DemoCase[]
  const runners: PartProcess[] = []

  beforeAll(async () => {
    redis = await startPrivateRedis()
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-loss'),
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = await buildDemoCases(stack, registry.jobs)
    const env = { ...stack.env, RUNNER_LOCK_MS: '3000', LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }
    for (let index = 0; index < 2; index++) runners.push(await startPart('runner', env))
  }, 180_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await stack?.stop()
    await redis?.stop()
  }, 60_000)

  /**
   * Sends `count` requests (all at once, or `perSecond`), loses Redis with `lose` once a third is
   * fulfilled, then sends the last third.
   */
  async function lossDuring(
    name: string,
    count: number,
    lose: () => Promise<void>,
    perSecond?: number,
  ): Promise<void> {
    const { consumer, provider } = stack.contracts
    const nodeKey = stack.env.NODE_PRIVATE_KEY!
    const nonceBefore = await provider.getTransactionCount(new Wallet(nodeKey).address)
    const fromBlock = (await provider.getBlockNumber()) + 1
    const linesBefore = runners.map((runner) => (runner.output().match(LOST_LINE) ?? []).length)
    let fulfilledAtLoss = -1
    // The loss comes once a third of the requests are answered, as the chain tells, and the last
    // third is sent only after it: the loss falls inside the load however fast the runners answer
    // (the first two thirds were once all answered before a loaded machine's poll saw a third).
    const answered = () => oracleResponsesSince(stack, fromBlock)
    const loss = (async () => {
      await waitFor('a third answered', async () => (await answered()) >= count / 3, 180_000, 20)
      fulfilledAtLoss = await answered()
      await lose()
    })()
    const requests = requestsOfCases(cases, count)
    const beforeLoss = Math.ceil((count * 2) / 3)
    const sent = await sendPaced(stack, requests.slice(0, beforeLoss), perSecond)
    await loss
    sent.push(...(await sendPaced(stack, requests.slice(beforeLoss), perSecond)))
    const fulfilled = await waitForFulfilments(
      consumer,
      provider,
      sent.map((request) => request.requestId),
      { fromBlock, timeoutMs: 240_000 },
    )
    expect(fulfilledAtLoss).toBeLessThan(count)
    const missing = sent.filter((request) => !fulfilled.has(request.requestId.toLowerCase()))
    // What the records and the runners said of a request never fulfilled (empty when none is).
    expect(await whatHappenedTo(missing.map((request) => request.requestId))).toEqual([])
    expect(fulfilled.size).toBe(count)
    expect(await wrongValues(cases, sent, fulfilled)).toEqual([])
    // Whatever is still in flight settles before the chain is counted.
    await waitFor(
      'the node key idle',
      async () =>
        Number(
          await provider.send('eth_getTransactionCount', [new Wallet(nodeKey).address, 'pending']),
        ) === (await provider.getTransactionCount(new Wallet(nodeKey).address)),
      120_000,
      100,
    )
    const chain = await onChainFulfilments(stack, fromBlock, nodeKey, nonceBefore)
    expect(chain.responses).toBe(count)
    expect(chain.uniqueResponses).toBe(count)
    const lines = runners.map(
      (runner, index) => (runner.output().match(LOST_LINE) ?? []).length - linesBefore[index]!,
    )
    // Each runner noticed the loss, and said so once (else whether it still runs, what it said of
    // Redis and its rebuild, and its last lines: a runner that died says so there).
    const said = runners.map((runner) => ({
      exited: runner.child.exitCode ?? runner.child.signalCode,
      said: runner
        .output()
        .split('\n')
        .filter((line) => /Redis|rebuil|exit|uncaught|fatal/i.test(line))
        .slice(-12),
      last: runner.output().slice(-1_500),
    }))
    expect(lines, JSON.stringify(said, null, 1)).toEqual([1, 1])
    // Redis is a cache of the chain: the records the loss took come back from it, answered by the
    // transaction the chain names (those of requests answered before the loss are made again by the
    // rebuild; the reconciler would never see them, having no record to check).
    const answers = await answeringTransactions(stack, fromBlock)
    const ids = sent.map((request) => request.requestId)
    const disagreeing = async () => {
      const runs = await readRuns(stack, ids)
      return ids.filter((id) => {
        const run = runs.get(id)
        return (
          run?.state !== 'fulfilled' || run.txHash?.toLowerCase() !== answers.get(id.toLowerCase())
        )
      })
    }
    await waitFor(
      'every run record as the chain says',
      async () => (await disagreeing()).length === 0,
      120_000,
      250,
    ).catch(() => undefined)
    expect(await disagreeing()).toEqual([])
    recordFigures(`redis-loss-${name}`, {
      requests: count,
      fulfilledAtLoss,
      oracleResponses: chain.responses,
      nodeTransactions: chain.nonceDelta,
      revertedDuplicates: chain.reverted,
    })
  }

  /** The transaction that answered each request since `fromBlock`, by request id (lower case). */
  async function answeringTransactions(
    devStack: DevStack,
    fromBlock: number,
  ): Promise<Map<string, string>> {
    const { operator, provider } = devStack.contracts
    const logs = await provider.getLogs({
      address: await operator.getAddress(),
      topics: [operator.interface.getEvent('OracleResponse')!.topicHash],
      fromBlock,
    })
    return new Map(
      logs.map((log) => [log.topics[1]!.toLowerCase(), log.transactionHash.toLowerCase()]),
    )
  }

  async function whatHappenedTo(requestIds: string[]): Promise<string[]> {
    const runs = await readRuns(stack, requestIds)
    return requestIds.map((id) => {
      const said = runners
        .flatMap((runner) => runner.output().split('\n'))
        .filter((line) => line.toLowerCase().includes(id.toLowerCase().slice(2, 18)))
      return `${id}: ${JSON.stringify(runs.get(id) ?? 'no record')} ${said.join(' | ').slice(0, 2_000)}`
    })
  }

  async function flushAll(): Promise<void> {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    try {
      await client.flushall()
    } finally {
      client.disconnect()
    }
  }

  it('FLUSHALL during a burst of 200: every request fulfilled exactly once', async () => {
    await lossDuring('burst', 200, flushAll)
  }, 420_000)

  it('FLUSHALL during a paced run (100 at 10 a second): every request fulfilled exactly once', async () => {
    await lossDuring('paced', 100, flushAll, 10)
  }, 420_000)

  it('Redis replaced by an empty instance: every request fulfilled exactly once', async () => {
    await lossDuring('replaced', 100, async () => {
      const port = redis.port
      await redis.stop()
      redis = await startPrivateRedis({ port })
    })
  }, 420_000)
})
