import type { Contract } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { deployFeedConsumer } from '../../src/dev/deploy.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type ConsumerRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import type { RunRecord } from '../../src/runner/run-record.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  isFinalRun,
  readRuns,
  recordFigures,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'

const MAX_CONCURRENT = 2
const MAX_PER_MINUTE = 5
const FLOOD = 12
const FAIR = 4
const PACED = 6

/**
 * Per-requester limits hold across runner processes (issue 23 item 4): two runner processes on one
 * Redis, one requester (a consumer contract) floods with a burst, another sends its requests one by one.
 * then one at a time; another sends its requests one by one. The flooder never has more than
 * REQUESTER_MAX_CONCURRENT_RUNS runs in progress across both processes, nor more than
 * REQUESTER_MAX_REQUESTS_PER_MINUTE started in any 60 s; the rest are refused with their reason; the
 * other requester is fulfilled throughout (read from the chain).
 */
describe('per-requester limits across two runner processes', () => {
  let stack: DevStack
  let cases: DemoCase[]
  let flooder: Contract
  const runners: PartProcess[] = []

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-requester'),
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = (await buildDemoCases(stack, registry.jobs)).filter(
      (demoCase) => demoCase.job.name === 'datafeed game-odds (uint256)',
    )
    flooder = await deployFeedConsumer(stack.contracts)
    const env = {
      ...stack.env,
      REQUESTER_MAX_CONCURRENT_RUNS: String(MAX_CONCURRENT),
      REQUESTER_MAX_REQUESTS_PER_MINUTE: String(MAX_PER_MINUTE),
      LOG_LEVEL: 'warn',
    }
    for (let index = 0; index < 2; index++) runners.push(await startPart('runner', env))
  }, 180_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await stack?.stop()
  }, 60_000)

  function request(): ConsumerRequest {
    const demoCase = cases[0]!
    return {
      externalJobId: demoCase.job.externalJobId,
      valueType: demoCase.shape.answerType,
      params: demoCase.params,
      payment: demoCase.minimumPayment ?? 0n,
    }
  }

  async function finalRuns(requestIds: string[]): Promise<RunRecord[]> {
    let runs = await readRuns(stack, requestIds)
    // A bound that only catches a hang: each run ends within seconds on an idle machine.
    for (let waited = 0; ![...runs.values()].every(isFinalRun) && waited < 120_000; waited += 200) {
      await new Promise((resolveDelay) => setTimeout(resolveDelay, 200))
      runs = await readRuns(stack, requestIds)
    }
    expect([...runs.values()].every(isFinalRun), JSON.stringify([...runs.values()])).toBe(true)
    return [...runs.values()] as RunRecord[]
  }

  it('a flooding requester is held to its limits by both processes together; the other is fulfilled', async () => {
    expect(cases.length).toBe(1)
    const { consumer, deployer, provider } = stack.contracts
    const flood = await sendConsumerRequests(
      flooder,
      deployer,
      Array.from({ length: FLOOD }, () => request()),
    )
    // The fair requester sends one at a time while the flood is being served.
    const fairIds: string[] = []
    for (let index = 0; index < FAIR; index++) {
      const [sent] = await sendConsumerRequests(consumer, deployer, [request()])
      fairIds.push(sent!.requestId)
      const fulfilled = await waitForFulfilments(consumer, provider, [sent!.requestId], {
        fromBlock: sent!.blockNumber,
        timeoutMs: 120_000,
      })
      expect(fulfilled.size, `fair request ${index}`).toBe(1)
    }

    // Then the flooder asks one at a time: no longer busy, it meets the minute's bound, wherever its
    // requests run.
    for (let index = 0; index < PACED; index++) {
      const [sent] = await sendConsumerRequests(flooder, deployer, [request()])
      flood.push(sent!)
      await finalRuns([sent!.requestId])
    }
    const floodRuns = await finalRuns(flood.map((sent) => sent.requestId))
    const admitted = floodRuns.filter((run) => run.state !== 'refused')
    const refused = floodRuns.filter((run) => run.state === 'refused')
    for (const run of refused)
      expect(run.reason).toMatch(
        /REQUESTER_MAX_CONCURRENT_RUNS \(2\) allows|REQUESTER_MAX_REQUESTS_PER_MINUTE \(5\) allows/,
      )
    // Counted in one process each, the two could admit twice the minute's bound.
    const spans = admitted
      .map((run) => ({ start: run.times.running ?? 0, end: Math.max(...Object.values(run.times)) }))
      .sort((a, b) => a.start - b.start)
    for (let index = 0; index + MAX_PER_MINUTE < spans.length; index++)
      expect(spans[index + MAX_PER_MINUTE]!.start - spans[index]!.start).toBeGreaterThanOrEqual(
        60_000,
      )
    const busy = refused.filter((run) => run.reason?.includes('REQUESTER_MAX_CONCURRENT_RUNS'))
    const rateLimited = refused.length - busy.length
    expect(busy.length).toBeGreaterThan(0)
    // Unless the machine took over a minute to admit them, the paced requests met the minute's bound.
    if (spans.length > 0 && spans.at(-1)!.start - spans[0]!.start < 60_000)
      expect(rateLimited).toBeGreaterThan(0)
    // In progress at once: from the start of each admitted run to its end.
    const mostAtOnce = Math.max(
      ...spans.map(
        ({ start: at }) => spans.filter(({ start, end }) => start <= at && end > at).length,
      ),
    )
    expect(mostAtOnce).toBeLessThanOrEqual(MAX_CONCURRENT)

    // The chain agrees: the admitted flood runs are fulfilled, the refused ones are not.
    const onChain = await waitForFulfilments(
      flooder,
      provider,
      flood.map((sent) => sent.requestId),
      { fromBlock: flood[0]!.blockNumber, timeoutMs: 1 },
    )
    expect(onChain.size).toBe(admitted.filter((run) => run.state === 'fulfilled').length)
    for (const run of refused) expect(onChain.has(run.requestId)).toBe(false)
    recordFigures('requester-limits', {
      burst: FLOOD,
      paced: PACED,
      admitted: admitted.length,
      refusedBusy: busy.length,
      refusedRateLimited: rateLimited,
      mostAtOnce,
      fairFulfilled: fairIds.length,
    })
  }, 300_000)
})
