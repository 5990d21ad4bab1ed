import { DEFAULT_MIN_CONTRACT_PAYMENT_JUELS } from '../../src/runner/admission.ts'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { selectorOf, specIdsOf } from '../../src/pipeline/index.ts'
import type { RunRecord } from '../../src/runner/run-record.ts'
import type { Runner } from '../../src/runner/runner.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'
import { cborAliasBomb } from '../support/decode-bombs.ts'
import { startHostileSource, type HostileSource } from '../support/hostile-source.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  fairGameOddsRequest,
  GAME_ODDS_JOB_ID,
  isFinalRun,
  readRuns,
  recordFigures,
  startPart,
  stopPart,
  type PartProcess,
} from './support.ts'

/**
 * Issue 38's alias bomb, sent on chain: an OracleRequest whose CBOR data is 24 levels of shared
 * references (2^24 leaves once copied) took a dev stack from 194 MB to 3.7 GB and aborted it, and
 * killed `feedrunner start` on every restart. Here it goes to a runner on the dev stack, and then to
 * a `feedrunner start` process, beside its JSON cousin (a source answering 3 MiB of empty arrays to a
 * spec that reads up to 4 MiB): each run errors naming its cause, the process's RSS (sampled every
 * 25 ms while it runs) stays within 50 MB of where it was, and the next request is fulfilled, read
 * from the chain.
 */
const WIDE_ID = 'a1b2c3d4-0000-4000-8000-00000000a038'
const MB = 1024 * 1024

/** The documented Get > Uint256 spec, reading bodies of up to 4 MiB (an operator's literal choice). */
function wideSpec(): string {
  return readFileSync(join(import.meta.dirname, '../pipeline/specs/docs/get-uint256.toml'), 'utf8')
    .replace(/externalJobID = "[^"]+"/, `externalJobID = "${WIDE_ID}"`)
    .replace(/name = "[^"]+"/, 'name = "wide answers"')
    .replace(
      'allowUnrestrictedNetworkAccess="true"]',
      'allowUnrestrictedNetworkAccess="true" maxResponseBytes="4194304"]',
    )
}

const fair = fairGameOddsRequest()

describe('the alias bomb and its JSON cousin, on chain', () => {
  let stack: DevStack
  let runner: Runner | undefined
  let start: PartProcess | undefined
  let source: HostileSource
  let jobsDir: string
  const figures: Record<string, unknown> = {}

  beforeAll(async () => {
    source = await startHostileSource()
    jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-alias-bomb-'))
    copyFileSync(
      join(import.meta.dirname, '../../jobs/game-odds.toml'),
      join(jobsDir, 'game-odds.toml'),
    )
    writeFileSync(join(jobsDir, 'wide.toml'), wideSpec())
    const env = {
      ...process.env,
      REDIS_URL: testRedisUrl(),
      JOBS_DIR: jobsDir,
      LOG_LEVEL: 'fatal',
      RPC_URL: '',
      EA_PORT: '',
    }
    const logger = createLogger(parseSettings({ LOG_LEVEL: 'fatal' }), 'alias-bomb')
    stack = await startDevStack({ env, prefix: uniquePrefix('rel-bomb'), runner: false, logger })
    runner = await startRunnerFromSettings(stack.settings, logger, {
      env: { ...env, ...stack.env },
    })
  }, 180_000)

  afterAll(async () => {
    await runner?.stop()
    await stopPart(start)
    await stack?.stop()
    await source?.close()
    if (jobsDir) rmSync(jobsDir, { recursive: true, force: true })
  })

  /** An OracleRequest with these CBOR bytes, sent by the deployer through LINK's transferAndCall. */
  async function sendRawRequest(externalJobID: string, data: Uint8Array): Promise<string> {
    const { linkToken, operator, consumer, deployer } = stack.contracts
    const nonce = BigInt(Date.now()) * 1000n + BigInt(Math.floor(Math.random() * 1000))
    const call = operator.interface.encodeFunctionData('oracleRequest', [
      deployer.address,
      0n,
      specIdsOf(externalJobID).ascii,
      await consumer.getAddress(),
      selectorOf('fulfillUint256(bytes32,uint256)'),
      nonce,
      1n,
      data,
    ])
    const sent = await linkToken.getFunction('transferAndCall')(
      await operator.getAddress(),
      0n,
      call,
    )
    const receipt = await sent.wait()
    const log = receipt.logs
      .map((entry: { topics: string[]; data: string }) => operator.interface.parseLog(entry))
      .find((parsed: { name?: string } | null) => parsed?.name === 'OracleRequest')
    if (!log) throw new Error('the request transaction emitted no OracleRequest')
    return String(log.args.requestId).toLowerCase()
  }

  /** The hostile runs' final records, while `rss` is sampled; the growth of its peak over its start. */
  async function finalRunsWatching(
    requestIds: readonly string[],
    rss: () => number,
  ): Promise<{ runs: RunRecord[]; growthMb: number }> {
    const baseline = rss()
    let peak = baseline
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 25)
    try {
      for (let waited = 0; ; waited += 100) {
        const runs = await readRuns(stack, requestIds)
        if ([...runs.values()].every(isFinalRun))
          return {
            runs: [...runs.values()] as RunRecord[],
            growthMb: Math.round(((peak - baseline) / MB) * 10) / 10,
          }
        if (waited > 90_000) throw new Error(`runs not final: ${JSON.stringify([...runs])}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    } finally {
      clearInterval(sampler)
    }
  }

  async function hostileRuns(rss: () => number, label: string): Promise<void> {
    const bombId = await sendRawRequest(GAME_ODDS_JOB_ID, cborAliasBomb(24))
    const wide = await sendConsumerRequests(stack.contracts.consumer, stack.contracts.deployer, [
      {
        externalJobId: WIDE_ID,
        valueType: 'uint256',
        params: [
          ['get', `${source.url}/wide`],
          ['path', '0'],
          ['times', '1'],
        ],
        payment: DEFAULT_MIN_CONTRACT_PAYMENT_JUELS,
      },
    ])
    const { runs, growthMb } = await finalRunsWatching([bombId, wide[0]!.requestId], rss)
    const [bomb, json] = runs as [RunRecord, RunRecord]
    expect(bomb.state, JSON.stringify(bomb)).toBe('errored')
    expect(bomb.reason).toMatch(
      /data uses CBOR tag 28 \(a shared value, which tag 29 refers back to\)/,
    )
    expect(json.state, JSON.stringify(json)).toBe('errored')
    expect(json.reason).toMatch(
      /data \(JSON\) would build more than 100000 values \(DECODE_MAX_NODES\)/,
    )
    expect(growthMb).toBeLessThan(50)
    // The next request is fulfilled, read from the chain.
    const { consumer, provider } = stack.contracts
    const next = await sendConsumerRequests(consumer, stack.contracts.deployer, [fair])
    const fulfilled = await waitForFulfilments(consumer, provider, [next[0]!.requestId], {
      fromBlock: next[0]!.blockNumber,
      timeoutMs: 60_000,
    })
    expect(fulfilled.size).toBe(1)
    figures[label] = {
      rssGrowthMb: growthMb,
      bombReason: bomb.reason?.slice(0, 160),
      jsonReason: json.reason?.slice(0, 160),
      nextFulfilled: fulfilled.size,
    }
  }

  it('a runner on the dev stack: both runs error with their cause, RSS stays, the next is fulfilled', async () => {
    // Warm-up: every code path of a fair run loaded before the baseline.
    const warm = await sendConsumerRequests(stack.contracts.consumer, stack.contracts.deployer, [
      fair,
    ])
    await waitForFulfilments(
      stack.contracts.consumer,
      stack.contracts.provider,
      [warm[0]!.requestId],
      {
        fromBlock: warm[0]!.blockNumber,
        timeoutMs: 60_000,
      },
    )
    global.gc?.()
    await hostileRuns(() => process.memoryUsage().rss, 'devStackRunner')
  }, 240_000)

  it('feedrunner start (adapter, workers and runner in one process): the same', async () => {
    await runner?.stop()
    runner = undefined
    await stack.adapter.close()
    await stack.workers.close()
    start = await startPart('start', { ...stack.env, JOBS_DIR: jobsDir, LOG_LEVEL: 'warn' })
    const pid = start.child.pid!
    // Warm-up, as above: a fair run loads every code path, its isolates' included, before the baseline.
    const warm = await sendConsumerRequests(stack.contracts.consumer, stack.contracts.deployer, [
      fair,
    ])
    await waitForFulfilments(
      stack.contracts.consumer,
      stack.contracts.provider,
      [warm[0]!.requestId],
      { fromBlock: warm[0]!.blockNumber, timeoutMs: 60_000 },
    )
    const rss = () => {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8')
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
    }
    await hostileRuns(rss, 'feedrunnerStart')
    expect(start.child.exitCode).toBeNull()
    recordFigures('alias-bomb', figures)
  }, 300_000)
})
