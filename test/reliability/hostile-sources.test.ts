import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Contract } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { deployFeedConsumer } from '../../src/dev/deploy.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import type { HostResolver } from '../../src/pipeline/index.ts'
import type { Runner } from '../../src/runner/runner.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'
import { FINAL_RUN_STATES, type RunRecord } from '../../src/runner/run-record.ts'
import {
  PUBLIC_UNSERVED_V6,
  startHostileSource,
  type HostileSource,
} from '../support/hostile-source.ts'
import { DEFAULT_MIN_CONTRACT_PAYMENT_JUELS } from '../../src/runner/admission.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { fairGameOddsRequest, recordFigures } from './support.ts'

/**
 * Issue 23's hostile sources, end to end on loopback: a requester names a URL (Chainlink's Get > Uint256
 * spec) served by a source that answers endlessly, 200 MB chunked, a byte a second, deeply nested,
 * a number of 10^6 digits, invalid UTF-8, a binary type, redirects in a loop, or (through a guarded
 * spec and an injected resolver) a name that answers public then loopback. Each run errors with its
 * reason, the process's RSS grows by less than 50 MB, and another requester's requests are fulfilled
 * meanwhile, read from the chain.
 */
const UNRESTRICTED_ID = 'a1b2c3d4-0000-4000-8000-00000000e023'
const GUARDED_ID = 'a1b2c3d4-0000-4000-8000-00000000f023'
const MB = 1024 * 1024

/** Chainlink's documented Get > Uint256 spec, with a 5 s fetch timeout; guarded: without allowUnrestrictedNetworkAccess. */
function getUint256Spec(externalJobID: string, guarded: boolean): string {
  const source = readFileSync(
    join(import.meta.dirname, '../pipeline/specs/docs/get-uint256.toml'),
    'utf8',
  )
  return source
    .replace(/externalJobID = "[^"]+"/, `externalJobID = "${externalJobID}"`)
    .replace(/name = "[^"]+"/, `name = "hostile ${guarded ? 'guarded' : 'unrestricted'}"`)
    .replace(
      'fetch        [type="http" method=GET url="$(decode_cbor.get)" allowUnrestrictedNetworkAccess="true"]',
      guarded
        ? 'fetch        [type="http" method=GET url="$(decode_cbor.get)" timeout="5s" retries="1" minBackoff="10ms"]'
        : 'fetch        [type="http" method=GET url="$(decode_cbor.get)" allowUnrestrictedNetworkAccess="true" timeout="5s"]',
    )
}

describe('hostile sources against a running runner', () => {
  let stack: DevStack
  let runner: Runner
  let source: HostileSource
  let hostileConsumer: Contract
  let jobsDir: string
  const resolved: string[] = []
  // A public address no test serves stands for the public answer.
  const rebinding: HostResolver = async (hostname) => {
    const address = resolved.length === 0 ? PUBLIC_UNSERVED_V6 : '127.0.0.1'
    resolved.push(`${hostname}=${address}`)
    return [{ address, family: address.includes(':') ? 6 : 4 }]
  }

  beforeAll(async () => {
    source = await startHostileSource()
    jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-hostile-jobs-'))
    copyFileSync(
      join(import.meta.dirname, '../../jobs/game-odds.toml'),
      join(jobsDir, 'game-odds.toml'),
    )
    writeFileSync(join(jobsDir, 'unrestricted.toml'), getUint256Spec(UNRESTRICTED_ID, false))
    writeFileSync(join(jobsDir, 'guarded.toml'), getUint256Spec(GUARDED_ID, true))
    const env = {
      ...process.env,
      REDIS_URL: testRedisUrl(),
      JOBS_DIR: jobsDir,
      LOG_LEVEL: 'fatal',
      RPC_URL: '',
      EA_PORT: '',
    }
    const logger = createLogger(parseSettings({ LOG_LEVEL: 'fatal' }), 'hostile-sources')
    stack = await startDevStack({
      env,
      prefix: uniquePrefix('rel-hostile-src'),
      runner: false,
      logger,
    })
    runner = await startRunnerFromSettings(stack.settings, logger, {
      env: { ...env, ...stack.env },
      resolveHost: rebinding,
    })
    hostileConsumer = await deployFeedConsumer(stack.contracts)
  }, 180_000)

  afterAll(async () => {
    await runner?.stop()
    await stack?.stop()
    await source?.close()
    if (jobsDir) rmSync(jobsDir, { recursive: true, force: true })
  })

  async function finalRun(requestId: string, timeoutMs: number): Promise<RunRecord> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const run = await runner.runs.get(requestId)
      if (run && (FINAL_RUN_STATES as readonly string[]).includes(run.state)) return run
      if (Date.now() > deadline)
        throw new Error(`run ${requestId} not final: ${JSON.stringify(run).slice(0, 1500)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  it('every hostile source ends its run with its reason; RSS grows < 50 MB; the other requester is served', async () => {
    const { consumer, deployer, provider } = stack.contracts
    const fair = (count: number) => Array.from({ length: count }, fairGameOddsRequest)
    const hostile = (path: string, jobId = UNRESTRICTED_ID, host = source.url) => ({
      externalJobId: jobId,
      valueType: 'uint256' as const,
      params: [
        ['get', `${host}${path}`],
        ['path', 'value'],
        ['times', '1'],
      ] as const,
      // The docs' spec sets no minContractPaymentLinkJuels: the chain's minimum applies.
      payment: DEFAULT_MIN_CONTRACT_PAYMENT_JUELS,
    })
    // Warm-up: one fair request and one fair answer through the http task load every code path.
    const warm = await sendConsumerRequests(hostileConsumer, deployer, [hostile('/ok?value=42')])
    const warmFair = await sendConsumerRequests(consumer, deployer, fair(1))
    const from = warm[0]!.blockNumber
    const warmed = await waitForFulfilments(
      consumer,
      provider,
      warmFair.map((sent) => sent.requestId),
      { fromBlock: from, timeoutMs: 60_000 },
    )
    expect(warmed.size).toBe(1)
    const warmValue = [...warmed.values()][0]!.value
    expect(warmValue).toBeGreaterThan(0n)
    expect((await finalRun(warm[0]!.requestId, 60_000)).state).toBe('fulfilled')

    const cases: Array<[string, ReturnType<typeof hostile>, RegExp]> = [
      [
        'endless chunked',
        hostile('/endless'),
        /over the cap of 32768 bytes \(HTTP_TASK_MAX_RESPONSE_BYTES\)/,
      ],
      [
        '200 MB chunked',
        hostile('/chunked-200mb'),
        /over the cap of 32768 bytes \(HTTP_TASK_MAX_RESPONSE_BYTES\)/,
      ],
      ['a byte a second', hostile('/drip'), /timed out after 5000 ms/],
      ['deep nesting', hostile('/deep'), /nesting deeper than 64 .*JSON_MAX_DEPTH/],
      ['10^6-digit number', hostile('/big-number'), /over the cap of 32768 bytes/],
      ['invalid UTF-8', hostile('/bad-utf8'), /not UTF-8 text/],
      ['wrong content type', hostile('/binary'), /content-type image\/png, not JSON or text/],
      ['redirect loop', hostile('/loop'), /redirected more than 20 times/],
      [
        'rebinding resolver',
        hostile('/ok?value=7', GUARDED_ID, `http://rebind.test:${source.port}`),
        /rebind\.test resolves to 127\.0\.0\.1, a special-purpose address \(127\.0\.0\.0\/8 Loopback/,
      ],
    ]
    global.gc?.()
    const baseline = process.memoryUsage().rss
    let peak = baseline
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 25)
    const started = Date.now()
    try {
      const sentHostile = await sendConsumerRequests(
        hostileConsumer,
        deployer,
        cases.map(([, request]) => request),
      )
      // The other requester's requests go out while the hostile runs are in progress.
      const sentFair = await sendConsumerRequests(consumer, deployer, fair(5))
      const fulfilled = await waitForFulfilments(
        consumer,
        provider,
        sentFair.map((sent) => sent.requestId),
        { fromBlock: sentFair[0]!.blockNumber, timeoutMs: 120_000 },
      )
      expect(fulfilled.size).toBe(5)
      for (const fulfilment of fulfilled.values()) expect(fulfilment.value).toBe(warmValue)
      const reasons: Record<string, string> = {}
      for (const [index, [name, , reason]] of cases.entries()) {
        const run = await finalRun(sentHostile[index]!.requestId, 60_000).catch((error: Error) => {
          throw new Error(`${name}: ${error.message}`)
        })
        reasons[name] = run.reason ?? ''
        expect(run.state, name).toBe('errored')
        expect(run.reason, name).toMatch(reason)
      }
      // Nothing hostile was fulfilled on chain.
      const hostileFulfilled = await waitForFulfilments(
        hostileConsumer,
        provider,
        sentHostile.map((sent) => sent.requestId),
        { fromBlock: sentHostile[0]!.blockNumber, timeoutMs: 1 },
      )
      expect(hostileFulfilled.size).toBe(0)
      const growthMb = (peak - baseline) / MB
      recordFigures('hostile-sources', {
        baselineRssMb: Math.round(baseline / MB),
        peakRssMb: Math.round(peak / MB),
        growthMb: Math.round(growthMb * 10) / 10,
        sourceBytesSent: Object.fromEntries(source.sent),
        rebindingAnswers: resolved,
        fairFulfilled: fulfilled.size,
        seconds: Math.round((Date.now() - started) / 1000),
        reasons,
      })
      expect(growthMb).toBeLessThan(50)
      // The source of 200 MB was cut off far before it could send them.
      expect(source.sent.get('/chunked-200mb') ?? 0).toBeLessThan(32 * MB)
      // The rebinding name reached the guard twice (public, then loopback) and loopback never answered it.
      expect(resolved).toEqual([`rebind.test=${PUBLIC_UNSERVED_V6}`, 'rebind.test=127.0.0.1'])
    } finally {
      clearInterval(sampler)
    }
  }, 300_000)
})
