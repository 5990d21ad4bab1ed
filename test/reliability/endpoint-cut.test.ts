import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
  recordFigures,
  requestsOfCases,
  runsNotFulfilled,
  sendPaced,
  startPart,
  stopPart,
  wrongValues,
  type PartProcess,
} from './support.ts'

const COUNT = 60
const PER_SECOND = 10
const CUT_MS = 15_000

/**
 * One chain behind two RPC endpoints (CHAINS_FILE), the first (the preferred one) a TCP proxy the
 * test cuts for 15 s in the middle of a paced run, with two runner processes. Reads fail over to the
 * second endpoint and broadcasts reach it: nothing is lost, nothing is fulfilled twice (the chain's
 * OracleResponse logs), and each process says at most 3 lines about the outage (down, back).
 */
describe('one of two RPC endpoints cut for 15 s during a paced run', () => {
  let stack: DevStack
  let cases: DemoCase[]
  let proxy: TcpProxy
  const runners: PartProcess[] = []

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-endpoint-cut'),
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = await buildDemoCases(stack, registry.jobs)
    proxy = await startTcpProxy(Number(new URL(stack.env.RPC_URL!).port))
    const chainsFile = join(mkdtempSync(join(tmpdir(), 'endpoint-cut-')), 'chains.toml')
    writeFileSync(
      chainsFile,
      `[[chains]]
chain_id = ${stack.contracts.chainId}
keys_env = ["NODE_PRIVATE_KEY"]
endpoints = [{ url = "${proxy.url}" }, { url = "${stack.env.RPC_URL}" }]
`,
    )
    const env = {
      ...stack.env,
      RPC_URL: '',
      CHAINS_FILE: chainsFile,
      RUNNER_LOCK_MS: '3000',
      RUNNER_RECONCILE_INTERVAL_MS: '2000',
      // Info: the back line of an outage is one (the down line is a warning).
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    }
    for (let index = 0; index < 2; index++) runners.push(await startPart('runner', env))
  }, 180_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await proxy?.close()
    await stack?.stop()
  }, 60_000)

  it('60 requests at 10/s with the preferred endpoint cut: none lost, none twice, the outage in a few lines', async () => {
    const { consumer, provider } = stack.contracts
    const nodeKey = stack.env.NODE_PRIVATE_KEY!
    const node = new Wallet(nodeKey).address
    const nonceBefore = await provider.getTransactionCount(node)
    const fromBlock = (await provider.getBlockNumber()) + 1
    const linesBefore = runners.map((runner) => runner.output().split('\n').length)
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
    expect(fulfilled.size).toBe(COUNT)
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
    expect(await runsNotFulfilled(stack, requestIds, 120_000)).toEqual([])

    // The endpoint comes back into the pool: its back line is there once a probe finds it.
    await waitFor(
      'every runner to say the endpoint answers again',
      async () => runners.every((runner) => /answers again/.test(runner.output())),
      60_000,
    )
    const runLines = runners.map((runner, index) =>
      runner.output().split('\n').slice(linesBefore[index]).filter(Boolean),
    )
    const outage = runLines.map((lines) =>
      lines
        .filter((line) => line.includes(`:${proxy.port}`) || /ECONN/.test(line))
        .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? line),
    )
    const outageLines = outage.map((lines) => lines.length)
    const errorLines = runLines.map((lines) => lines.filter((line) => /"level":(50|60)/.test(line)))
    if (process.env.ENDPOINT_CUT_SHOW_LOGS)
      for (const lines of runLines) console.log(lines.join('\n'))
    recordFigures('endpoint-cut', {
      requests: COUNT,
      answeredAtCut,
      connectionsRefusedWhileCut: proxy.refused,
      oracleResponses: chain.responses,
      nodeTransactions: chain.nonceDelta,
      revertedDuplicates: chain.reverted,
      outageLinesPerRunner: outageLines,
    })
    for (const lines of outage) {
      expect(lines.length, lines.join('\n')).toBeGreaterThanOrEqual(1)
      expect(lines.length, lines.join('\n')).toBeLessThanOrEqual(3)
    }
    expect(errorLines).toEqual([[], []])
  }, 600_000)
})
