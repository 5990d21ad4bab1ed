import { existsSync } from 'node:fs'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { startTestServer, type TestServer } from '../pipeline/support/http-server.ts'
import {
  LIBFAKETIME,
  countRevertedFrom,
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

const REQUESTS = 100

/**
 * Two runner processes whose wall clocks disagree by 120 s (the second's shifted by libfaketime, as on a
 * host whose clock drifts), one Redis, a burst of requests; with the dev stack's one sender key (one
 * process owns it, the other stands by) and with two (each owns one). Whatever decides who owns a
 * request or a key expires by Redis's clock, so every request is fulfilled once, one transaction each.
 */
describe.each([
  { keys: [ANVIL_PRIVATE_KEYS[1]] },
  { keys: [ANVIL_PRIVATE_KEYS[1], ANVIL_PRIVATE_KEYS[3]] },
])('clock skew: two runners 120 s apart, $keys.length sender key(s)', ({ keys: KEYS }) => {
  let stack: DevStack
  let cases: DemoCase[]
  const runners: PartProcess[] = []

  beforeAll(async () => {
    if (!existsSync(LIBFAKETIME))
      throw new Error(
        `${LIBFAKETIME} is missing: this test shifts a runner's clock with Debian's libfaketime. Install it with \`sudo apt-get install -y faketime\` (.ci/run does this).`,
      )
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-skew'),
      nodeKeys: KEYS,
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    // As the burst: `request game-odds`, one game.
    cases = (await buildDemoCases(stack, registry.jobs))
      .filter((demoCase) => demoCase.job.name.includes('game-odds'))
      .slice(0, 1)
    if (cases.length === 0) throw new Error('no game-odds job in JOBS_DIR')
    // The default RUNNER_LOCK_MS (30 s): well inside the clocks' 120 s apart.
    const env = { ...stack.env, LOG_LEVEL: 'warn' }
    runners.push(await startPart('runner', env))
    runners.push(
      await startPart('runner', {
        ...env,
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME: '+120s',
        // Timers run on the monotonic clock: only the wall clock (Date.now()) is shifted.
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      }),
    )
  }, 180_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await stack?.stop()
  }, 60_000)

  it(`fulfils a burst of ${REQUESTS} requests exactly once, one transaction each`, async () => {
    const { provider } = stack.contracts
    const addresses = KEYS.map((key) => new Wallet(key!).address)
    const noncesBefore = await Promise.all(addresses.map((a) => provider.getTransactionCount(a)))
    const fromBlock = (await provider.getBlockNumber()) + 1
    const sent = await sendPaced(stack, requestsOfCases(cases, REQUESTS))
    const fulfilled = await waitForFulfilments(
      stack.contracts.consumer,
      provider,
      sent.map((request) => request.requestId),
      { fromBlock, timeoutMs: 240_000 },
    )
    if (fulfilled.size < REQUESTS)
      for (const runner of runners) console.log(`--- runner ---\n${runner.output().slice(-4000)}`)
    expect(fulfilled.size).toBe(REQUESTS)
    expect(await wrongValues(cases, sent, fulfilled)).toEqual([])
    // From the chain: one OracleResponse per request, one transaction of the keys each, none reverted.
    expect(await oracleResponsesSince(stack, fromBlock)).toBe(REQUESTS)
    const noncesAfter = await Promise.all(addresses.map((a) => provider.getTransactionCount(a)))
    const transactions = noncesAfter.reduce((sum, after, at) => sum + after - noncesBefore[at]!, 0)
    expect(transactions).toBe(REQUESTS)
    const reverted = await Promise.all(
      addresses.map((address) => countRevertedFrom(provider, address, fromBlock)),
    )
    expect(reverted.every((count) => count === 0)).toBe(true)
    const ids = sent.map((request) => request.requestId)
    expect(await runsNotFulfilled(stack, ids, 30_000)).toEqual([])
    recordFigures(`clock-skew-${KEYS.length}-keys`, {
      requests: REQUESTS,
      fulfilled: fulfilled.size,
      transactions,
      perKey: noncesAfter.map((after, at) => after - noncesBefore[at]!),
    })
  }, 300_000)
})

/**
 * The narrow form of the same risk: a run that takes a while (its bridge call held 8 s), held by a
 * live runner, while a runner whose clock is 120 s ahead sweeps for runs to take over. Ownership of
 * the run is BullMQ's lock, renewed and expiring by Redis's clock: the request's bridge is called
 * once, and it is fulfilled once.
 */
describe('clock skew: a run held by a live runner is never taken by one whose clock is 120 s ahead', () => {
  const HOLD_MS = 8_000
  let stack: DevStack
  let relay: TestServer
  const runners: PartProcess[] = []
  let odds: DemoCase

  beforeAll(async () => {
    if (!existsSync(LIBFAKETIME))
      throw new Error(`${LIBFAKETIME} is missing: apt-get install faketime`)
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-skew-held'),
      nodeKeys: [ANVIL_PRIVATE_KEYS[1], ANVIL_PRIVATE_KEYS[3]],
      runner: false,
    })
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    odds = (await buildDemoCases(stack, registry.jobs)).find((demoCase) =>
      demoCase.job.name.includes('game-odds'),
    )!
    // Between the runners and the adapter: every bridge call is counted and held a while.
    relay = await startTestServer((request, response) => {
      void (async () => {
        await new Promise((resolve) => setTimeout(resolve, HOLD_MS))
        const answer = await fetch(stack.env.BRIDGE_DATAFEED_URL!, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: request.body,
        })
        response.writeHead(answer.status, { 'content-type': 'application/json' })
        response.end(await answer.text())
      })()
    })
    const env = { ...stack.env, LOG_LEVEL: 'warn', BRIDGE_DATAFEED_URL: relay.url }
    runners.push(await startPart('runner', env))
    runners.push(
      await startPart('runner', {
        ...env,
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME: '+120s',
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      }),
    )
  }, 180_000)

  afterAll(async () => {
    for (const runner of runners) await stopPart(runner)
    await relay?.close()
    await stack?.stop()
  }, 60_000)

  it('calls the bridge once for the request and fulfils it once', async () => {
    const { provider } = stack.contracts
    const fromBlock = (await provider.getBlockNumber()) + 1
    const sent = await sendPaced(stack, requestsOfCases([odds], 1))
    const fulfilled = await waitForFulfilments(
      stack.contracts.consumer,
      provider,
      sent.map((request) => request.requestId),
      { fromBlock, timeoutMs: 120_000 },
    )
    expect(fulfilled.size).toBe(1)
    expect(relay.requests).toHaveLength(1)
    expect(await oracleResponsesSince(stack, fromBlock)).toBe(1)
  }, 180_000)
})
