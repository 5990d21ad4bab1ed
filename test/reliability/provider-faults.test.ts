import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { waitFor } from '../../src/dev/process.ts'
import { getEndpoint } from '../../src/feeds/catalog/index.ts'
import {
  createFaultInjector,
  parseFaultSpec,
  FAULT_KINDS,
  type FaultInjector,
} from '../../src/feeds/server/faults.ts'
import { createFeedServer, type FeedServer } from '../../src/feeds/server/index.ts'
import { reduce } from '../../src/reduce/index.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { isFinalRun, readRuns, recordFigures } from './support.ts'

const SEED = Number(process.env.RELIABILITY_SEED ?? 7)
// 30 % of the calls go wrong: 8 % 500s, 5 % hangs, 6 % truncated JSON, 6 % data in another shape, 5 % slow.
const SPEC = `500=0.08,timeout=0.05,truncated=0.06,shape=0.06,slow=0.05,seed=${SEED},slowMs=300,hangMs=10000`
const REQUESTS = 40
const FEED_KEY = 'faults-feed-key-0001'

/** Why a run may fail when the provider misbehaves: each reason names the cause, never a vague "error". */
const PRECISE_REASON =
  /(500|injected fault|timed out|timeout|JSON|truncat|shape|drift|expected|missing|field|no value|Unexpected end)/i

describe('provider faults: the feed service answers 30 % of the calls wrongly', () => {
  let stack: DevStack
  let clean: FeedServer
  let injector: FaultInjector
  let geo: DemoCase

  beforeAll(async () => {
    injector = createFaultInjector(parseFaultSpec(SPEC))
    stack = await startDevStack({
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        LOG_LEVEL: 'error',
        EA_PORT: '',
        FETCH_TIMEOUT_MS: '1500',
        FETCH_ATTEMPTS: '3',
        FETCH_BACKOFF_MS: '100',
        ADAPTER_TIMEOUT_MS: '10000',
      },
      prefix: uniquePrefix('rel-faults'),
      feedKey: FEED_KEY,
      feedIntercept: injector.intercept,
    })
    // The same service without faults tells what each request's value must be.
    clean = createFeedServer({ keys: [FEED_KEY] })
    await clean.listen(0)
    geo = (await buildDemoCasesClean(stack, 'datafeed weather-forecast-geo (int256)'))[0]!
  }, 120_000)

  /** The demo case of a job, its expected value read from the service without faults. */
  async function buildDemoCasesClean(devStack: DevStack, jobName: string): Promise<DemoCase[]> {
    const registry = await loadJobRegistry(devStack.settings.JOBS_DIR, 31337)
    const loaded = registry.jobs.find((candidate) => candidate.name === jobName)!
    return buildDemoCases({ ...devStack, feedServer: { ...devStack.feedServer, url: clean.url } }, [
      loaded,
    ])
  }

  afterAll(async () => {
    await stack?.stop()
    await clean?.close()
  })

  it(`every one of ${REQUESTS} requests ends fulfilled with the right value or errored with a precise reason`, async () => {
    const entry = getEndpoint('weather')
    const paramsOf = (index: number): Array<[string, string]> =>
      geo.params.map(([name, value]) => [
        name,
        name === 'latitude' ? (-50 + index * 2.5).toFixed(4) : value,
      ])
    const expectedOf = async (params: Array<[string, string]>): Promise<string> => {
      const url = new URL(entry.path, clean.url)
      for (const [name, value] of params)
        if (name !== 'path' && name !== 'times') url.searchParams.set(name, value)
      url.searchParams.set('key', FEED_KEY)
      const envelope = await (await fetch(url)).json()
      const get = (name: string) => params.find(([param]) => param === name)?.[1]
      return String(
        reduce(envelope, {
          path: get('path')!,
          type: 'int256',
          times: get('times'),
          aliases: entry.aliases,
          truncation: 'trunc',
        }),
      )
    }
    const paramSets = Array.from({ length: REQUESTS }, (_, index) => paramsOf(index))
    const expected = await Promise.all(paramSets.map(expectedOf))
    const { consumer, provider, deployer } = stack.contracts
    const fromBlock = (await provider.getBlockNumber()) + 1
    const startedAt = Date.now()
    const sent = await sendConsumerRequests(
      consumer,
      deployer,
      paramSets.map((params) => ({
        externalJobId: geo.job.externalJobId,
        valueType: 'int256',
        params,
        payment: 0n,
      })),
    )
    const ids = sent.map((request) => request.requestId)
    // Nothing hangs: every run reaches a final state within a bound (retries and backoffs included).
    await waitFor(
      'every run to end fulfilled or errored',
      async () => [...(await readRuns(stack, ids)).values()].every(isFinalRun),
      150_000,
      250,
    )
    const elapsedMs = Date.now() - startedAt
    const runs = await readRuns(stack, ids)
    await stack.runner!.listener!.whenScanned(await provider.getBlockNumber(), 10_000)
    const onChain = await waitForFulfilments(consumer, provider, ids, {
      fromBlock,
      timeoutMs: 2_000,
    })

    const outcomes = { fulfilled: 0, errored: 0 }
    const reasons: Record<string, number> = {}
    for (const [index, id] of ids.entries()) {
      const run = runs.get(id)!
      expect(['fulfilled', 'errored'], `run ${id}`).toContain(run.state)
      if (run.state === 'fulfilled') {
        outcomes.fulfilled++
        // No wrong value reaches the chain: a fulfilled request carries the clean service's value.
        expect(String(onChain.get(id)?.value), `request ${index}`).toBe(expected[index])
      } else {
        outcomes.errored++
        expect(run.reason, `run ${id}`).toMatch(PRECISE_REASON)
        expect(onChain.has(id), `errored run ${id} has no fulfilment on chain`).toBe(false)
        const short = (run.reason ?? '')
          .replace(/0x[0-9a-f]+/gi, '0x…')
          .replace(/^.*answered (\d+): /, 'adapter $1: ')
        reasons[short] = (reasons[short] ?? 0) + 1
      }
    }
    // Every fulfilment on chain belongs to a fulfilled run with the right value (checked above).
    expect(onChain.size).toBe(outcomes.fulfilled)
    const stats = injector.stats()
    for (const kind of FAULT_KINDS)
      expect(stats.injected[kind], `faults of kind ${kind}`).toBeGreaterThan(0)
    expect(outcomes.fulfilled).toBeGreaterThan(REQUESTS / 2)
    recordFigures('provider-faults', {
      seed: SEED,
      spec: SPEC,
      requests: REQUESTS,
      upstreamCalls: stats.calls,
      faultsInjected: stats.injected,
      outcomes,
      reasons,
      elapsedMs,
    })
  }, 200_000)

  it('feeds serve --faults: a 100 % 500 spec answers 500, a bad spec is refused with a message', async () => {
    const bin = join(import.meta.dirname, '../../bin/feedrunner.js')
    const bad = spawn(
      process.execPath,
      [bin, 'feeds', 'serve', '--port', '0', '--keys', 'k1', '--faults', '500=2'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let badOutput = ''
    bad.stderr.on('data', (chunk: Buffer) => (badOutput += chunk.toString()))
    const badCode = await new Promise<number | null>((resolve) => bad.once('exit', resolve))
    expect(badCode).not.toBe(0)
    expect(badOutput).toMatch(/rate 500 must be within 0\.\.1/)

    const child = spawn(
      process.execPath,
      [bin, 'feeds', 'serve', '--port', '0', '--keys', 'k1', '--faults', '500=1,seed=3'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let text = ''
        child.stdout.on('data', (chunk: Buffer) => {
          text += chunk.toString()
          const match = /listening on (http:\/\/\S+)/.exec(text)
          if (match) resolve(match[1]!)
        })
        child.once('exit', (code) => reject(new Error(`feeds serve exited ${code}`)))
      })
      const example = new URLSearchParams({ ...getEndpoint('game-odds').example, key: 'k1' })
      const response = await fetch(`${url}${getEndpoint('game-odds').path}?${example}`)
      expect(response.status).toBe(500)
      expect(((await response.json()) as { description: string }).description).toMatch(
        /injected fault/,
      )
    } finally {
      child.kill('SIGTERM')
      await new Promise((resolve) =>
        child.exitCode !== null ? resolve(null) : child.once('exit', resolve),
      )
    }
  }, 60_000)
})
