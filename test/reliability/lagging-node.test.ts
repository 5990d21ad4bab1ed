import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import type { DemoCase } from '../../src/dev/demo.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { startJsonRpcTap, type JsonRpcTap } from '../support/json-rpc-tap.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  expectFulfilledOnce,
  gameOddsCases,
  requestsOfCases,
  sendPaced,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'

/** How far the lagging node is behind the one that told the listener its head. */
const LAG_BLOCKS = 2
const REQUESTS = 10

/**
 * One RPC_URL, two nodes behind it, as a load balancer gives: every other eth_getLogs goes to a node
 * LAG_BLOCKS behind the one that told the listener its head (test/support/json-rpc-tap.ts). A node
 * that refuses what it has not got makes the scan read again, quietly; one that answers a range past
 * its head with the logs it has (older clients, anvil) must not make the listener move past the rest.
 * Either way every request is fulfilled once, and the runner's log holds no warning or error about it.
 */
describe('an RPC_URL whose nodes lag each other', () => {
  let stack: DevStack
  let tap: JsonRpcTap
  let runner: PartProcess
  let cases: DemoCase[]

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-lagging-node'),
      nodeKeys: [ANVIL_PRIVATE_KEYS[1]!],
      runner: false,
    })
    tap = await startJsonRpcTap({
      rpcUrl: stack.rpcUrl,
      wsUrl: stack.rpcUrl.replace(/^http/, 'ws'),
    })
    cases = await gameOddsCases(stack)
    runner = await startPart('runner', { ...stack.env, RPC_URL: tap.httpUrl, LOG_LEVEL: 'info' })
  }, 180_000)

  afterAll(async () => {
    await stopPart(runner)
    await tap?.stop()
    await stack?.stop()
  }, 60_000)

  it.each(['refuse', 'truncate'] as const)(
    `a lagging node that answers a range past its head as "%s": ${REQUESTS} requests fulfilled once each, nothing said`,
    async (answer) => {
      const { provider } = stack.contracts
      tap.laggingLogs = { blocks: LAG_BLOCKS, answer }
      const laggedBefore = tap.laggedReads
      const linesBefore = runner.output().split('\n').length
      const fromBlock = (await provider.getBlockNumber()) + 1
      const sent = await sendPaced(stack, requestsOfCases(cases, REQUESTS), 2)
      await expectFulfilledOnce(stack, cases, sent, fromBlock, { output: () => runner.output() })
      tap.laggingLogs = undefined
      // The fault happened: the lagging node refused or shortened some of the listener's reads.
      expect(tap.laggedReads).toBeGreaterThan(laggedBefore)
      const loud = runner
        .output()
        .split('\n')
        .slice(linesBefore - 1)
        .filter((line) => /"level":(40|50|60)/.test(line) && !line.includes('raw keys'))
      expect(loud).toEqual([])
    },
    300_000,
  )
})
