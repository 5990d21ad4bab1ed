import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type ConsumerRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  runsNotFulfilled,
  onChainFulfilments,
  readRuns,
  recordFigures,
  seededRandom,
  startPart,
  stopPart,
  wrongValues,
  type PartKind,
  type PartProcess,
} from './support.ts'

const REQUESTS = 200
const KILLS = 3
const SEED = Number(process.env.RELIABILITY_SEED ?? 20261122)

/**
 * Crash safety: runner, adapter and fetch workers as separate processes; three SIGKILLs of a randomly
 * chosen one at random points of the load, each followed by a restart. Nothing may be lost or doubled.
 */
describe('crash safety: SIGKILL of runner, adapter or worker processes under load', () => {
  let stack: DevStack
  let cases: DemoCase[]
  const parts = new Map<PartKind, PartProcess>()
  let partEnv: Record<string, string>

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-crash'),
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = await buildDemoCases(stack, registry.jobs)
    // The parts run as processes of their own; the stack's in-process adapter frees its port for one.
    await stack.adapter.close()
    await stack.workers.close()
    partEnv = { ...stack.env, RUNNER_LOCK_MS: '3000', LOG_LEVEL: 'warn' }
    for (const kind of ['adapter', 'worker', 'runner'] as const)
      parts.set(kind, await startPart(kind, partEnv))
  }, 120_000)

  afterAll(async () => {
    for (const part of parts.values()) await stopPart(part)
    await stack?.stop()
  })

  it(`fulfils ${REQUESTS} requests exactly once across ${KILLS} SIGKILLs and restarts`, async () => {
    const random = seededRandom(SEED)
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
    // Kill points: fulfilment counts spread over the run, and the victim of each, from the seed.
    const killAt = Array.from(
      { length: KILLS },
      () => 5 + Math.floor(random() * (REQUESTS * 0.8)),
    ).sort((a, b) => a - b)
    // Each part is killed once, in a random order: a crash of any of them must cost nothing.
    const victims: PartKind[] = (['runner', 'adapter', 'worker'] as const)
      .map((kind) => ({ kind, order: random() }))
      .sort((a, b) => a.order - b.order)
      .map(({ kind }) => kind)
    let fulfilledCount = 0
    const kills: Array<{ part: PartKind; atFulfilled: number; restartMs: number }> = []

    const chaos = (async () => {
      for (const [index, threshold] of killAt.entries()) {
        await waitFor(
          `${threshold} fulfilments before kill ${index + 1}`,
          async () => fulfilledCount >= threshold,
          120_000,
          20,
        )
        const kind = victims[index]!
        const victim = parts.get(kind)!
        victim.child.kill('SIGKILL')
        await victim.exited
        const restartedAt = Date.now()
        parts.set(kind, await startPart(kind, partEnv))
        kills.push({ part: kind, atFulfilled: fulfilledCount, restartMs: Date.now() - restartedAt })
      }
    })()

    const sent = await sendConsumerRequests(consumer, deployer, requests)
    const fulfilled = await waitForFulfilments(
      consumer,
      provider,
      sent.map((request) => request.requestId),
      {
        fromBlock,
        timeoutMs: 150_000,
        onFulfilled: () => void fulfilledCount++,
      },
    )
    await chaos

    if (fulfilled.size < REQUESTS) {
      const missing = sent
        .filter((request) => !fulfilled.has(request.requestId))
        .map((request) => request.requestId)
      const runs = await readRuns(stack, missing)
      console.log(
        '[reliability] crash: kills',
        JSON.stringify(kills),
        'unfulfilled runs:',
        JSON.stringify(
          [...runs.values()].slice(0, 5),
          (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v),
          1,
        ),
      )
      for (const part of parts.values())
        console.log(`--- ${part.kind} output ---\n${part.output().slice(-4000)}`)
    }
    expect(kills.length).toBe(KILLS)
    expect(fulfilled.size).toBe(REQUESTS)
    expect(await wrongValues(cases, sent, fulfilled)).toEqual([])
    // Exactly once on chain: one OracleResponse per request, one node transaction per fulfilment, none reverted.
    const chain = await onChainFulfilments(stack, fromBlock, nodeKey, nonceBefore)
    expect(chain).toEqual({
      responses: REQUESTS,
      uniqueResponses: REQUESTS,
      nonceDelta: REQUESTS,
      reverted: 0,
    })
    // No run left behind in received/running/sent.
    const ids = sent.map((request) => request.requestId)
    expect(await runsNotFulfilled(stack, ids, 30_000), `kills: ${JSON.stringify(kills)}`).toEqual(
      [],
    )

    recordFigures('crash', {
      seed: SEED,
      requests: REQUESTS,
      kills,
      fulfilled: fulfilled.size,
      oracleResponses: chain.responses,
      nodeTransactions: chain.nonceDelta,
      reverted: chain.reverted,
      nonFinalRuns: 0,
    })
  }, 200_000)
})
