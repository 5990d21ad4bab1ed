import { Wallet } from 'ethers'
import { afterAll, beforeAll, expect } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'
import {
  onChainFulfilments,
  oracleResponsesSince,
  requestsOfCases,
  sendPaced,
  startPart,
  stopPart,
  wrongValues,
  type PartProcess,
} from './support.ts'

// The scenario of rpc-cut.test.ts and endpoint-cut.test.ts: a paced run of demo requests through two
// runner processes that reach anvil through a TCP proxy, which is cut for 15 s once a fifth of the
// requests are answered. Each file says how the runners reach the chain and what it checks after.

const PER_SECOND = 10
const CUT_MS = 15_000

/** A dev stack without a runner, a TCP proxy in front of its anvil, and two runner processes. */
export interface CutScenario {
  readonly stack: DevStack
  readonly cases: DemoCase[]
  readonly proxy: TcpProxy
  readonly runners: readonly PartProcess[]
}

export interface CutScenarioOptions {
  /** The label of the stack's queue prefix. */
  prefix: string
  /**
   * What the runners' environment sets besides the stack's: how they reach the chain through the
   * proxy. Given after RUNNER_LOCK_MS=3000, RUNNER_RECONCILE_INTERVAL_MS=2000, LOG_LEVEL=warn and
   * LOG_FORMAT=json, so it may change those too.
   */
  runnerEnv(stack: DevStack, proxy: TcpProxy): Record<string, string>
}

/** Starts the scenario in the calling file's beforeAll and stops it in its afterAll. */
export function useCutScenario(options: CutScenarioOptions): CutScenario {
  let stack: DevStack | undefined
  let cases: DemoCase[] | undefined
  let proxy: TcpProxy | undefined
  const runners: PartProcess[] = []

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix(options.prefix),
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = await buildDemoCases(stack, registry.jobs)
    proxy = await startTcpProxy(Number(new URL(stack.env.RPC_URL!).port))
    const env = {
      ...stack.env,
      RUNNER_LOCK_MS: '3000',
      RUNNER_RECONCILE_INTERVAL_MS: '2000',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      ...options.runnerEnv(stack, proxy),
    }
    for (let index = 0; index < 2; index++) runners.push(await startPart('runner', env))
  }, 180_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await proxy?.close()
    await stack?.stop()
  }, 60_000)

  const started = () => {
    if (!stack || !cases || !proxy) throw new Error('the cut scenario is not started')
    return { stack, cases, proxy }
  }
  return {
    get stack() {
      return started().stack
    },
    get cases() {
      return started().cases
    },
    get proxy() {
      return started().proxy
    },
    runners,
  }
}

/** A cut run whose requests were all fulfilled exactly once. */
export interface CutRun {
  requestIds: string[]
  /** OracleResponse logs on chain answered before the cut. */
  answeredAtCut: number
  chain: Awaited<ReturnType<typeof onChainFulfilments>>
  /** The figures both scenarios record (the proxy's refusals read when called). */
  figures(): Record<string, unknown>
}

/**
 * Sends `count` requests of the demo cases at 10/s, cuts the proxy for 15 s once a fifth of them are
 * answered on chain, and checks what both scenarios require: the cut came before the last answer
 * and refused connections; every request was fulfilled with its case's value; once the node key is
 * idle, the chain holds exactly one OracleResponse per request.
 */
export async function runCut(scenario: CutScenario, count: number): Promise<CutRun> {
  const { stack, cases, proxy, runners } = scenario
  const { consumer, provider } = stack.contracts
  const nodeKey = stack.env.NODE_PRIVATE_KEY!
  const node = new Wallet(nodeKey).address
  const nonceBefore = await provider.getTransactionCount(node)
  const fromBlock = (await provider.getBlockNumber()) + 1
  let answeredAtCut = -1
  const cut = (async () => {
    await waitFor(
      'a fifth answered',
      async () => (await oracleResponsesSince(stack, fromBlock)) >= count / 5,
      180_000,
      20,
    )
    answeredAtCut = await oracleResponsesSince(stack, fromBlock)
    proxy.cut()
    await new Promise((resolve) => setTimeout(resolve, CUT_MS))
    proxy.restore()
  })()
  const sent = await sendPaced(stack, requestsOfCases(cases, count), PER_SECOND)
  const requestIds = sent.map((request) => request.requestId)
  const fulfilled = await waitForFulfilments(consumer, provider, requestIds, {
    fromBlock,
    timeoutMs: 300_000,
  })
  await cut
  expect(answeredAtCut).toBeLessThan(count)
  expect(proxy.refused).toBeGreaterThan(0)
  // What each runner said last, when a request was not fulfilled in time.
  expect(
    fulfilled.size,
    runners.map((runner) => runner.output().slice(-4_000)).join('\n---\n'),
  ).toBe(count)
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
  expect(chain.responses).toBe(count)
  expect(chain.uniqueResponses).toBe(count)
  return {
    requestIds,
    answeredAtCut,
    chain,
    figures: () => ({
      requests: count,
      answeredAtCut,
      connectionsRefusedWhileCut: proxy.refused,
      oracleResponses: chain.responses,
      nodeTransactions: chain.nonceDelta,
      revertedDuplicates: chain.reverted,
    }),
  }
}
