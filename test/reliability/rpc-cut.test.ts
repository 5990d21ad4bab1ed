import { Wallet } from 'ethers'
import { Queue } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { requestsQueueName } from '../../src/runner/requests-queue.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'
import {
  onChainFulfilments,
  oracleResponsesSince,
  readRuns,
  recordFigures,
  requestsOfCases,
  sendPaced,
  startPart,
  stopPart,
  wrongValues,
  type PartProcess,
} from './support.ts'

const COUNT = 100
const PER_SECOND = 10
const CUT_MS = 15_000
/** The runners' outage lines about the RPC node (src/config/dependency-health.ts). */
const RPC_OUTAGE_LINE = /RPC_URL/

/**
 * The RPC node goes away for 15 s in the middle of a paced run (issue 21): two runner processes reach
 * anvil only through a TCP proxy the test cuts (open connections reset, new ones refused). Every
 * request is fulfilled exactly once as the chain tells, and every run record agrees with the chain:
 * a run whose fulfilment was mined is `fulfilled`, whatever the sender saw while the link was down,
 * and nothing is left failed in the requests queue.
 */
describe('RPC node cut for 15 s during a paced run', () => {
  let stack: DevStack
  let cases: DemoCase[]
  let proxy: TcpProxy
  const runners: PartProcess[] = []

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-rpc-cut'),
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = await buildDemoCases(stack, registry.jobs)
    proxy = await startTcpProxy(Number(new URL(stack.env.RPC_URL!).port))
    const env = {
      ...stack.env,
      RPC_URL: proxy.url,
      RUNNER_LOCK_MS: '3000',
      RUNNER_RECONCILE_INTERVAL_MS: '2000',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
    }
    for (let index = 0; index < 2; index++) runners.push(await startPart('runner', env))
  }, 180_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await proxy?.close()
    await stack?.stop()
  }, 60_000)

  it('100 requests at 10/s with a 15 s cut: fulfilled exactly once, every run record agrees with the chain', async () => {
    const { consumer, provider } = stack.contracts
    const nodeKey = stack.env.NODE_PRIVATE_KEY!
    const node = new Wallet(nodeKey).address
    const nonceBefore = await provider.getTransactionCount(node)
    const fromBlock = (await provider.getBlockNumber()) + 1
    let answeredAtCut = -1
    const cut = (async () => {
      await waitFor(
        'a fifth answered',
        async () => (await oracleResponsesSince(stack, fromBlock)) >= COUNT / 5,
        180_000,
        20,
      )
      answeredAtCut = await oracleResponsesSince(stack, fromBlock)
      proxy.cut()
      await new Promise((resolve) => setTimeout(resolve, CUT_MS))
      proxy.restore()
    })()
    const sent = await sendPaced(stack, requestsOfCases(cases, COUNT), PER_SECOND)
    const requestIds = sent.map((request) => request.requestId)
    const fulfilled = await waitForFulfilments(consumer, provider, requestIds, {
      fromBlock,
      timeoutMs: 300_000,
    })
    await cut
    expect(answeredAtCut).toBeLessThan(COUNT)
    expect(proxy.refused).toBeGreaterThan(0)
    // What each runner said last, when a request was not fulfilled in time.
    expect(
      fulfilled.size,
      runners.map((runner) => runner.output().slice(-4_000)).join('\n---\n'),
    ).toBe(COUNT)
    expect(await wrongValues(cases, sent, fulfilled)).toEqual([])
    await waitFor(
      'the node key idle',
      async () =>
        Number(await provider.send('eth_getTransactionCount', [node, 'pending'])) ===
        (await provider.getTransactionCount(node)),
      120_000,
      100,
    )
    const chain = await onChainFulfilments(stack, fromBlock, nodeKey, nonceBefore)
    expect(chain.responses).toBe(COUNT)
    expect(chain.uniqueResponses).toBe(COUNT)

    // The records agree with the chain: all fulfilled (the reconciler moves any run the sender saw
    // fail while its transaction was mined), within a bound that only catches a hang.
    const notFulfilled = async () =>
      [...(await readRuns(stack, requestIds)).entries()]
        .filter(([, run]) => run?.state !== 'fulfilled')
        .map(([id, run]) => `${id}: ${run?.state ?? 'no record'} ${run?.reason ?? ''}`)
    let disagreeing = await notFulfilled()
    const disagreeingAfterRestore = disagreeing.length
    for (let waited = 0; disagreeing.length > 0 && waited < 120_000; waited += 500) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      disagreeing = await notFulfilled()
    }
    expect(disagreeing).toEqual([])
    const failedJobs = await failedRequestJobs()
    expect(failedJobs).toBe(0)
    const outageLines = runners.map(
      (runner) =>
        runner
          .output()
          .split('\n')
          .filter((line) => RPC_OUTAGE_LINE.test(line)).length,
    )
    if (process.env.RPC_CUT_SHOW_LOGS) for (const runner of runners) console.log(runner.output())
    recordFigures('rpc-cut', {
      requests: COUNT,
      answeredAtCut,
      connectionsRefusedWhileCut: proxy.refused,
      oracleResponses: chain.responses,
      nodeTransactions: chain.nonceDelta,
      revertedDuplicates: chain.reverted,
      recordsNotFulfilledWhenChainWasDone: disagreeingAfterRestore,
      outageLinesPerRunner: outageLines,
    })
  }, 600_000)

  async function failedRequestJobs(): Promise<number> {
    const connection = createRedisConnection(stack.redisUrl, 'worker')
    const queue = new Queue(requestsQueueName(stack.contracts.chainId), {
      connection,
      prefix: stack.settings.QUEUE_PREFIX,
    })
    try {
      return (await queue.getJobCounts('failed')).failed ?? 0
    } finally {
      await queue.close()
      connection.disconnect()
    }
  }
})
