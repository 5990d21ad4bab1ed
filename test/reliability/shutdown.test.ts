import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import {
  sendConsumerRequests,
  waitForFulfilments,
  type SentRequest,
} from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import type { FeedCall } from '../../src/feeds/server/index.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  isFinalRun,
  onChainFulfilments,
  readRuns,
  recordFigures,
  startPart,
  stopPart,
  type PartKind,
  type PartProcess,
} from './support.ts'

const SLOW_FEED_MS = 1_500
const EXIT_LIMIT_MS = 10_000
const BATCH = 8

/**
 * Graceful shutdown: SIGTERM reaches `feedrunner start`, `worker` and `runner` while requests are in
 * flight (the feed service answers slowly on purpose). Each process exits by itself within 10 s with
 * code 0, and every request it held is finished or handed back: all end fulfilled, each once.
 */
describe('graceful shutdown on SIGTERM with work in flight', () => {
  let stack: DevStack
  let geo: DemoCase
  let partEnv: Record<string, string>
  const parts = new Map<PartKind, PartProcess>()
  let inFlight = 0
  let batchIndex = 0
  /** Resolved by the next feed call to start (set before each batch is sent). */
  let callStarted: () => void = () => undefined

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-shutdown'),
      runner: false,
      // Every feed call takes a while, so a SIGTERM finds fetches and runs in progress.
      feedIntercept: async (_call: FeedCall) => {
        inFlight++
        callStarted()
        await new Promise((resolve) => setTimeout(resolve, SLOW_FEED_MS))
        inFlight--
        return false
      },
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    geo = (
      await buildDemoCases(
        stack,
        registry.jobs.filter((job) => job.name === 'datafeed weather-forecast-geo (int256)'),
      )
    )[0]!
    await stack.adapter.close()
    await stack.workers.close()
    partEnv = { ...stack.env, RUNNER_LOCK_MS: '4000', LOG_LEVEL: 'warn' }
  }, 120_000)

  afterAll(async () => {
    for (const part of parts.values()) await stopPart(part)
    await stack?.stop()
  })

  /** Requests that each need their own slow fetch (a different latitude each). */
  function sendBatch(): { sent: Promise<SentRequest[]>; firstCall: Promise<void> } {
    const firstCall = new Promise<void>((resolve) => (callStarted = resolve))
    const first = batchIndex
    batchIndex += BATCH
    const requests = Array.from({ length: BATCH }, (_, offset) => ({
      externalJobId: geo.job.externalJobId,
      valueType: 'int256' as const,
      params: geo.params.map(([name, value]): [string, string] => [
        name,
        name === 'latitude' ? (-60 + (first + offset) * 1.5).toFixed(4) : value,
      ]),
      payment: 0n,
    }))
    // The first fetch of the batch may start before every request's receipt is back.
    return {
      sent: sendConsumerRequests(stack.contracts.consumer, stack.contracts.deployer, requests),
      firstCall,
    }
  }

  /** SIGTERM once a feed call is in progress; resolves with how long the process took to exit and how. */
  async function terminateInFlight(
    part: PartProcess,
    batch: { sent: Promise<SentRequest[]>; firstCall: Promise<void> },
    sent: SentRequest[],
  ): Promise<{ part: PartKind; exitMs: number; code: number | null; inFlightAtSignal: number }> {
    await Promise.race([
      batch.firstCall,
      new Promise((_, reject) =>
        setTimeout(
          () =>
            reject(
              new Error(
                `no feed call within 30 s before stopping ${part.kind}; its output:\n${part.output().slice(-3000)}\nother parts:\n${[...parts.values()].map((other) => `${other.kind}: ${other.output().slice(-1500)}`).join('\n')}`,
              ),
            ),
          30_000,
        ),
      ),
    ])
    const inFlightAtSignal = inFlight
    const started = Date.now()
    part.child.kill('SIGTERM')
    const { code } = await part.exited
    sent.push(...(await batch.sent))
    return { part: part.kind, exitMs: Date.now() - started, code, inFlightAtSignal }
  }

  it('start, worker and runner each exit within 10 s with code 0; nothing they held is lost', async () => {
    const { provider } = stack.contracts
    const nodeKey = stack.env.NODE_PRIVATE_KEY!
    const nonceBefore = await provider.getTransactionCount(new Wallet(nodeKey).address)
    const fromBlock = (await provider.getBlockNumber()) + 1
    const sent: SentRequest[] = []
    const exits: Array<Awaited<ReturnType<typeof terminateInFlight>>> = []

    // 1. feedrunner start (adapter + workers + runner in one process).
    const start = await startPart('start', partEnv)
    exits.push(await terminateInFlight(start, sendBatch(), sent))

    // 2. The parts as processes of their own; a worker, then the runner, stopped mid-work and replaced.
    for (const kind of ['adapter', 'worker', 'runner'] as const)
      parts.set(kind, await startPart(kind, partEnv))
    exits.push(await terminateInFlight(parts.get('worker')!, sendBatch(), sent))
    parts.set('worker', await startPart('worker', partEnv))
    exits.push(await terminateInFlight(parts.get('runner')!, sendBatch(), sent))
    parts.set('runner', await startPart('runner', partEnv))

    for (const exit of exits) {
      expect(exit.code, `${exit.part} exit code`).toBe(0)
      expect(exit.exitMs, `${exit.part} exit time`).toBeLessThan(EXIT_LIMIT_MS)
    }
    const ids = sent.map((request) => request.requestId)
    const fulfilled = await waitForFulfilments(stack.contracts.consumer, provider, ids, {
      fromBlock,
      timeoutMs: 120_000,
    })
    expect(fulfilled.size).toBe(ids.length)
    const chain = await onChainFulfilments(stack, fromBlock, nodeKey, nonceBefore)
    expect(chain).toEqual({
      responses: ids.length,
      uniqueResponses: ids.length,
      nonceDelta: ids.length,
      reverted: 0,
    })
    await waitFor(
      'every run in a final state',
      async () => [...(await readRuns(stack, ids)).values()].every(isFinalRun),
      30_000,
      200,
    )
    const runs = await readRuns(stack, ids)
    expect(
      [...runs.values()]
        .filter((run) => run?.state !== 'fulfilled')
        .map((run) => `${run?.requestId}: ${run?.state}`),
    ).toEqual([])
    recordFigures('shutdown', {
      requests: ids.length,
      slowFeedMs: SLOW_FEED_MS,
      exits,
      fulfilled: fulfilled.size,
      nodeTransactions: chain.nonceDelta,
    })
  }, 240_000)
})
