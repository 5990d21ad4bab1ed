import { Queue } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { requestsQueueName } from '../../src/runner/requests-queue.ts'
import { runCut, useCutScenario } from './cut-scenario.ts'
import { readRuns, recordFigures } from './support.ts'

const COUNT = 100
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
  // The runners' only RPC node is the proxy.
  const scenario = useCutScenario({
    prefix: 'rel-rpc-cut',
    runnerEnv: (_stack, proxy) => ({ RPC_URL: proxy.url }),
  })

  it('100 requests at 10/s with a 15 s cut: fulfilled exactly once, every run record agrees with the chain', async () => {
    const { stack, runners } = scenario
    const { requestIds, figures } = await runCut(scenario, COUNT)

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
      ...figures(),
      recordsNotFulfilledWhenChainWasDone: disagreeingAfterRestore,
      outageLinesPerRunner: outageLines,
    })
  }, 600_000)

  async function failedRequestJobs(): Promise<number> {
    const { stack } = scenario
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
