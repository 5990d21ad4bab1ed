import { existsSync } from 'node:fs'
import { Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
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

/** Debian's libfaketime (`apt-get install faketime`): preloaded, it shifts one process's wall clock. */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'
const REQUESTS = 100
const KEYS = [ANVIL_PRIVATE_KEYS[1], ANVIL_PRIVATE_KEYS[3]]

/**
 * Two runner processes whose wall clocks disagree by 120 s (the second's shifted by libfaketime, as on a
 * host whose clock drifts), one Redis, two sender keys, a burst of requests. Whatever decides who owns
 * a request or a key expires by Redis's clock, so every request is fulfilled once, one transaction each.
 */
describe('clock skew: two runners 120 s apart share the work', () => {
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
    cases = (await buildDemoCases(stack, registry.jobs)).filter(
      (demoCase) => demoCase.job.name === 'game-odds',
    )
    const env = { ...stack.env, RUNNER_LOCK_MS: '5000', LOG_LEVEL: 'warn' }
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
    expect(reverted).toEqual([0, 0])
    const ids = sent.map((request) => request.requestId)
    expect(await runsNotFulfilled(stack, ids, 30_000)).toEqual([])
    recordFigures('clock-skew', {
      requests: REQUESTS,
      fulfilled: fulfilled.size,
      transactions,
      perKey: noncesAfter.map((after, at) => after - noncesBefore[at]!),
    })
  }, 300_000)
})
