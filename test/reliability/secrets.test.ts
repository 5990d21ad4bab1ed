import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { register as promRegister } from 'prom-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { createLogger, type Logger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { buildDemoCases, runDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { freePort } from '../../src/dev/ports.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { getEndpoint } from '../../src/feeds/catalog/index.ts'
import type { Runner } from '../../src/runner/runner.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'
import { dumpKeyspace, testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { recordFigures, startPart, stopPart, type PartProcess } from './support.ts'

// Recognisable secrets: any trace of them anywhere is a leak.
const FEED_KEY = 'FEEDKEY-leakcheck-7f3a9c1b2d4e5f60'
const NODE_KEY = ANVIL_PRIVATE_KEYS[5]
const NEEDLES = [FEED_KEY.toLowerCase(), NODE_KEY.slice(2).toLowerCase()]

function occurrences(haystack: string): number {
  const lower = haystack.toLowerCase()
  return NEEDLES.reduce((sum, needle) => sum + (lower.split(needle).length - 1), 0)
}

/** An HTTP relay that keeps what passes: the adapter's responses, or the keys a worker sends upstream. */
async function startRelay(
  target: () => string,
  record: (request: IncomingMessage, responseText: string) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      fetch(new URL(request.url ?? '/', target()), {
        method: request.method,
        headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
        ...(request.method === 'GET' || request.method === 'HEAD' ? {} : { body }),
      }).then(
        async (answer) => {
          const text = await answer.text()
          record(request, text)
          response.writeHead(answer.status, {
            'content-type': answer.headers.get('content-type') ?? 'application/json',
          })
          response.end(text)
        },
        (error: unknown) => {
          response.writeHead(502)
          response.end(String(error))
        },
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

describe('secrets never leak: a full demo with a recognisable feed key and node key', () => {
  let stack: DevStack
  let adapter: RunningAdapter
  let worker: PartProcess | undefined
  let runner: Runner
  let logger: Logger
  let cases: DemoCase[]
  const logLines: string[] = []
  const adapterResponses: string[] = []
  const childOutputs: string[] = []
  let bridgeRelay: { url: string; server: Server }
  let feedRelay: { url: string; server: Server }
  const capturedKeys: Array<{ path: string; query: URLSearchParams }> = []

  beforeAll(async () => {
    const env = { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'debug', EA_PORT: '' }
    logger = createLogger(
      parseSettings({ ...env, FEED_API_KEY: FEED_KEY, NODE_PRIVATE_KEY: NODE_KEY }),
      'secrets',
      { write: (line: string) => void logLines.push(line) },
    )
    stack = await startDevStack({
      env,
      prefix: uniquePrefix('rel-secrets'),
      runner: false,
      nodeKeys: [NODE_KEY],
      feedKey: FEED_KEY,
      logger,
    })
    // Parts of our own: an adapter with metrics on, a worker process, and the runner behind a recording bridge relay.
    await stack.adapter.close()
    await stack.workers.close()
    adapter = await startAdapter({
      settings: stack.settings,
      logger: logger.child({ part: 'adapter' }),
      framework: { METRICS_ENABLED: true, METRICS_PORT: await freePort() },
    })
    bridgeRelay = await startRelay(
      () => adapter.url,
      (_request, text) => void adapterResponses.push(text),
    )
    feedRelay = await startRelay(
      () => stack.feedServer.url,
      (request) => {
        const url = new URL(request.url ?? '/', 'http://relay')
        capturedKeys.push({ path: url.pathname, query: url.searchParams })
      },
    )
    worker = await startPart('worker', { ...stack.env, LOG_LEVEL: 'debug' })
    runner = await startRunnerFromSettings(stack.settings, logger.child({ part: 'runner' }), {
      env: { ...process.env, ...stack.env, BRIDGE_DATAFEED_URL: bridgeRelay.url },
    })
    cases = await buildDemoCases(stack, runner.registry.jobs)
  }, 120_000)

  afterAll(async () => {
    await runner?.stop()
    await stopPart(worker)
    await adapter?.close()
    for (const relay of [bridgeRelay, feedRelay])
      if (relay) await new Promise((resolve) => relay.server.close(resolve))
    await stack?.stop()
  })

  it('zero occurrences in logs, process output, Redis, metrics, adapter responses and on chain', async () => {
    const results = await runDemoCases(stack, cases, 90_000)
    expect(
      results
        .filter((result) => !result.ok)
        .map(
          (result) => `${result.job.name}: ${String(result.actual)} != ${String(result.expected)}`,
        ),
    ).toEqual([])
    // Hostile callers try to read secrets through the adapter; their answers are scanned too.
    for (const key of ['##env:NODE_PRIVATE_KEY', '##env:FEED_API_KEY', FEED_KEY, '##env:PATH']) {
      const response = await fetch(bridgeRelay.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id: '1',
          data: { endpoint: 'game-odds', ...getEndpoint('game-odds').example, key },
        }),
      })
      await response.text()
    }
    await stopPart(worker)
    childOutputs.push(worker!.output())
    worker = undefined

    const redisText = await dumpKeyspace(stack.redisUrl, stack.settings.QUEUE_PREFIX)
    const metricsText = [
      adapter.metricsUrl ? await (await fetch(adapter.metricsUrl)).text() : '',
      await promRegister.metrics(),
    ].join('\n')
    const chainText = await dumpChain(stack)
    const scanned = {
      logLines: logLines.length,
      childOutputBytes: childOutputs.join('').length,
      redisBytes: redisText.length,
      metricsBytes: metricsText.length,
      adapterResponses: adapterResponses.length,
      chainBytes: chainText.length,
    }
    expect(logLines.length).toBeGreaterThan(50)
    expect(adapterResponses.length).toBeGreaterThanOrEqual(cases.length)
    expect(redisText).toContain('bull')
    expect(metricsText).toMatch(/# TYPE/)
    const found = {
      logs: occurrences(logLines.join('\n')),
      childOutput: occurrences(childOutputs.join('\n')),
      redis: occurrences(redisText),
      metrics: occurrences(metricsText),
      adapterResponses: occurrences(adapterResponses.join('\n')),
      chain: occurrences(chainText),
    }
    expect(found).toEqual({
      logs: 0,
      childOutput: 0,
      redis: 0,
      metrics: 0,
      adapterResponses: 0,
      chain: 0,
    })
    recordFigures('secrets', {
      demoRequests: results.length,
      fulfilled: results.filter((result) => result.ok).length,
      scanned,
      occurrences: found,
    })
  }, 180_000)

  it('signed mode: every token is verified by the feed service; a captured token is refused for another request and on replay', async () => {
    // A fresh adapter (empty cache) and a worker in signed mode that reaches the feed service through a
    // relay; their fetch queues live under a prefix of their own, so no finished fetch is reused.
    const fetchPrefix = `${stack.settings.QUEUE_PREFIX}-signed`
    await adapter.close()
    adapter = await startAdapter({
      settings: { ...stack.settings, QUEUE_PREFIX: fetchPrefix },
      logger: logger.child({ part: 'adapter' }),
      framework: { METRICS_ENABLED: false },
    })
    const feedUrls = {
      SPORTS_URL: feedRelay.url,
      BLOCKCHAIN_URL: feedRelay.url,
      NFT_URL: feedRelay.url,
      WEATHER_URL: feedRelay.url,
    }
    worker = await startPart('worker', {
      ...stack.env,
      ...feedUrls,
      QUEUE_PREFIX: fetchPrefix,
      SIGNKEY_MODE: 'signed',
      LOG_LEVEL: 'warn',
    })
    const before = capturedKeys.length
    const results = await runDemoCases(stack, cases, 90_000)
    expect(results.filter((result) => !result.ok).map((result) => result.job.name)).toEqual([])
    const calls = capturedKeys.slice(before)
    expect(calls.length).toBeGreaterThanOrEqual(
      new Set(cases.map((demoCase) => JSON.stringify(demoCase.params))).size - 2,
    )
    for (const call of calls) {
      expect(call.query.get('key'), call.path).toMatch(/^v1\./)
      expect(call.query.get('key')).not.toContain(FEED_KEY)
    }
    // Replays of a captured token: for the same call (already used once) and for another one.
    const captured = calls.find((call) => call.path === getEndpoint('game-odds').path) ?? calls[0]!
    const replay = new URL(captured.path, stack.feedServer.url)
    for (const [name, value] of captured.query) replay.searchParams.set(name, value)
    const sameAgain = await fetch(replay)
    expect(sameAgain.status).toBe(401)
    const other = new URL(replay)
    const firstParam = [...captured.query.keys()].find((name) => name !== 'key')!
    other.searchParams.set(firstParam, `${captured.query.get(firstParam)}x`)
    const forAnother = await fetch(other)
    expect([400, 401]).toContain(forAnother.status)
    const anotherEndpoint = new URL(getEndpoint('weather').path, stack.feedServer.url)
    for (const [name, value] of Object.entries(getEndpoint('weather').example))
      anotherEndpoint.searchParams.set(name, value)
    anotherEndpoint.searchParams.set('key', captured.query.get('key')!)
    const onAnotherEndpoint = await fetch(anotherEndpoint)
    expect(onAnotherEndpoint.status).toBe(401)
    expect(occurrences(worker.output())).toBe(0)
    recordFigures('signed-keys', {
      demoRequests: results.length,
      fulfilled: results.filter((result) => result.ok).length,
      signedCallsVerified: calls.length,
      replaySameStatus: sameAgain.status,
      replayOtherParamsStatus: forAnother.status,
      replayOtherEndpointStatus: onAnotherEndpoint.status,
    })
  }, 180_000)

  /** Every transaction's calldata and every log from block 0 to the head. */
  async function dumpChain(devStack: DevStack): Promise<string> {
    const { provider } = devStack.contracts
    const head = await provider.getBlockNumber()
    const parts: string[] = []
    for (let number = 0; number <= head; number++) {
      const block = await provider.getBlock(number, true)
      for (const tx of block?.prefetchedTransactions ?? []) parts.push(tx.data)
    }
    for (const log of await provider.getLogs({ fromBlock: 0, toBlock: head }))
      parts.push(log.data, ...log.topics)
    return parts.join('\n')
  }
})
