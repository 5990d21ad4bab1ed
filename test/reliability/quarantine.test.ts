import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Contract } from 'ethers'
import Fastify from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { deployFeedConsumer } from '../../src/dev/deploy.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { DEFAULT_MIN_CONTRACT_PAYMENT_JUELS } from '../../src/runner/admission.ts'
import { FINAL_RUN_STATES, RunStore, type RunRecord } from '../../src/runner/run-record.ts'
import { replayRun } from '../../src/runner/replay.ts'
import { registerRunsRoute } from '../../src/runner/webhook.ts'
import type { Runners } from '../../src/runner/start.ts'
import { startRunnerFromSettings } from '../../src/runner/start.ts'
import { connectClient } from '../../src/queue/connection.ts'
import { startTestServer, type TestServer } from '../pipeline/support/http-server.ts'
import { jsonWideBomb } from '../support/decode-bombs.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { fairGameOddsRequest, oracleResponsesSince, startPart, stopPart } from './support.ts'

const POISON_ID = 'a1b2c3d4-0000-4000-8000-00000000c038'
const POISON_WEBHOOK_ID = 'a1b2c3d4-0000-4000-8000-00000000c039'
const RUNS_TOKEN = 'quarantine-operator-token-'.padEnd(40, 'x')

/** A webhook job that fetches the URL its caller sends and reads the answer's first element. */
const POISON_WEBHOOK_SPEC = `type = "webhook"
schemaVersion = 1
name = "poison-webhook"
externalJobID = "${POISON_WEBHOOK_ID}"
observationSource = """
  fetch [type="http" method=GET url="$(jobRun.requestBody.url)" allowUnrestrictedNetworkAccess="true"]
  parse [type="jsonparse" path="0" data="$(fetch)"]
  fetch -> parse
"""
`
const MB = 1024 * 1024

/** Chainlink's documented Get > Uint256 spec, reaching a loopback source. */
function getUint256Spec(): string {
  return readFileSync(join(import.meta.dirname, '../pipeline/specs/docs/get-uint256.toml'), 'utf8')
    .replace(/externalJobID = "[^"]+"/, `externalJobID = "${POISON_ID}"`)
    .replace(/name = "[^"]+"/, 'name = "poison"')
}

const poison = (url: string) => ({
  externalJobId: POISON_ID,
  valueType: 'uint256' as const,
  params: [
    ['get', url],
    ['path', '0'],
    ['times', '1'],
  ] as const,
  payment: DEFAULT_MIN_CONTRACT_PAYMENT_JUELS,
})

async function finalRun(runs: RunStore, requestId: string): Promise<RunRecord> {
  let run: RunRecord | undefined
  await waitFor(
    `run ${requestId} final`,
    async () => {
      run = await runs.get(requestId)
      return run !== undefined && FINAL_RUN_STATES.includes(run.state)
    },
    120_000,
    100,
  )
  return run as RunRecord
}

/**
 * A request whose run crashes (its isolate dies under a decode that builds past its heap) is tried
 * again once, then quarantined: errored with that cause, never taken again by itself; the runner
 * goes on serving. The decode budget is lifted here (as an operator may), so the isolate is what holds.
 */
describe('poison requests: an isolate that dies twice quarantines its request', () => {
  let stack: DevStack
  let runner: Runners
  let source: TestServer
  let consumer: Contract
  let jobsDir: string

  beforeAll(async () => {
    const bomb = jsonWideBomb(9 * MB)
    source = await startTestServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(bomb)
    })
    jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-poison-jobs-'))
    copyFileSync(
      join(import.meta.dirname, '../../jobs/game-odds.toml'),
      join(jobsDir, 'game-odds.toml'),
    )
    writeFileSync(join(jobsDir, 'poison.toml'), getUint256Spec())
    writeFileSync(join(jobsDir, 'poison-webhook.toml'), POISON_WEBHOOK_SPEC)
    const env = {
      ...process.env,
      REDIS_URL: testRedisUrl(),
      JOBS_DIR: jobsDir,
      LOG_LEVEL: 'fatal',
      RPC_URL: '',
      EA_PORT: '',
      RUN_ISOLATE_MEMORY_MB: '64',
      DECODE_MAX_NODES: '1000000000',
      HTTP_TASK_MAX_RESPONSE_BYTES: String(16 * MB),
    }
    const logger = createLogger(parseSettings({ LOG_LEVEL: 'fatal' }), 'poison')
    stack = await startDevStack({ env, prefix: uniquePrefix('rel-poison'), runner: false, logger })
    runner = await startRunnerFromSettings(stack.settings, logger, {
      env: { ...env, ...stack.env },
    })
    consumer = await deployFeedConsumer(stack.contracts)
  }, 180_000)

  afterAll(async () => {
    await runner?.stop()
    await stack?.stop()
    await source?.close()
    if (jobsDir) rmSync(jobsDir, { recursive: true, force: true })
  })

  it('records it errored and quarantined after two crashes, sends nothing, and fulfils the next request', async () => {
    const { deployer, provider } = stack.contracts
    const rssBefore = process.memoryUsage().rss
    const [sent] = await sendConsumerRequests(consumer, deployer, [poison(`${source.url}/bomb`)])
    const run = await finalRun(runner.runs, sent!.requestId)
    expect(run.state).toBe('errored')
    expect(run.quarantined).toBe(true)
    expect(run.reason).toMatch(
      /^quarantined: its run crashed 2 times \(RUN_MAX_CRASHES\); the last: .*its isolate died: what it built passed its heap of RUN_ISOLATE_MEMORY_MB=64/,
    )
    // Fetched twice (the first try, one retry), then never again.
    expect(source.requests).toHaveLength(2)
    const counts = await runner.requestsQueue.getJobCounts('waiting', 'delayed', 'active')
    expect(counts).toEqual({ waiting: 0, delayed: 0, active: 0 })
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(300 * MB)
    // The runner serves on.
    const [fair] = await sendConsumerRequests(stack.contracts.consumer, deployer, [
      fairGameOddsRequest(),
    ])
    const fulfilled = await waitForFulfilments(
      stack.contracts.consumer,
      provider,
      [fair!.requestId],
      {
        fromBlock: fair!.blockNumber,
        timeoutMs: 60_000,
      },
    )
    expect(fulfilled.size).toBe(1)
    expect(await oracleResponsesSince(stack, sent!.blockNumber)).toBe(1)
  }, 180_000)

  it('quarantines a webhook call whose runs crash twice, as it does a request, and replay refuses it', async () => {
    const redis = await connectClient(stack.redisUrl)
    const app = Fastify()
    try {
      registerRunsRoute(app, {
        runners: () => runner.byChain,
        redis,
        prefix: stack.settings.QUEUE_PREFIX,
        operatorToken: RUNS_TOKEN,
        maxBodyBytes: 4_096,
        maxCallsPerMinute: 100,
        now: () => Date.now(),
      })
      await app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = app.server.address() as { port: number }
      const fetchesBefore = source.requests.length
      const answer = await fetch(`http://127.0.0.1:${port}/v2/jobs/${POISON_WEBHOOK_ID}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${RUNS_TOKEN}` },
        body: JSON.stringify({ url: `${source.url}/bomb` }),
      })
      expect(answer.status).toBe(200)
      const { data } = (await answer.json()) as { data: { id: string } }
      const run = await finalRun(runner.runs, data.id)
      expect(run.trigger).toBe('call')
      expect(run.state).toBe('errored')
      expect(run.quarantined).toBe(true)
      expect(run.reason).toMatch(
        /^quarantined: its run crashed 2 times \(RUN_MAX_CRASHES\); the last: .*its isolate died: .*a new call to the job runs it again$/,
      )
      // Run twice (the first try, one retry), then never again.
      expect(source.requests.length - fetchesBefore).toBe(2)
      const counts = await runner.requestsQueue.getJobCounts('waiting', 'delayed', 'active')
      expect(counts).toEqual({ waiting: 0, delayed: 0, active: 0 })
      await expect(
        replayRun(data.id, {
          runs: runner.runs,
          requestsQueue: runner.requestsQueue,
          provider: stack.contracts.provider,
          clock: { now: () => Date.now() } as never,
        }),
      ).rejects.toThrow(/a webhook call's, which runs replay does not run again/)
    } finally {
      await app.close()
      redis.disconnect()
    }
  }, 180_000)
})

/**
 * A request whose runner process dies while running it, twice (SIGKILL; BullMQ finds the job stalled
 * and gives it to the next runner), is quarantined by the third runner instead of run a third time.
 */
describe('poison requests: a request whose runner dies twice while running it is quarantined', () => {
  let stack: DevStack
  let holdFeed = true

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-poison-kill'),
      runner: false,
      // The fetch never answers while held: each runner is killed in the middle of the run.
      feedIntercept: async () => {
        while (holdFeed) await new Promise((resolve) => setTimeout(resolve, 50))
        return false
      },
    })
  }, 120_000)

  afterAll(async () => {
    holdFeed = false
    await stack?.stop()
  })

  it('is errored and quarantined, never fulfilled, and the next request is', async () => {
    const env = { ...stack.env, RUNNER_LOCK_MS: '3000', LOG_LEVEL: 'warn' }
    const redis = await connectClient(stack.redisUrl)
    const runs = new RunStore(redis, `${stack.settings.QUEUE_PREFIX}:runner`, 31337)
    try {
      const [sent] = await sendConsumerRequests(
        stack.contracts.consumer,
        stack.contracts.deployer,
        [fairGameOddsRequest()],
      )
      let runningSince = 0
      for (let kill = 1; kill <= 2; kill++) {
        const runner = await startPart('runner', env)
        // Its run started (a run writes `running` with its time) and its fetch is held.
        await waitFor(
          `run ${kill} under way`,
          async () => ((await runs.get(sent!.requestId))?.times.running ?? 0) > runningSince,
          60_000,
          50,
        )
        runningSince = (await runs.get(sent!.requestId))!.times.running!
        runner.child.kill('SIGKILL')
        await runner.exited
      }
      const third = await startPart('runner', env)
      try {
        const run = await finalRun(runs, sent!.requestId)
        expect(run.state).toBe('errored')
        expect(run.quarantined).toBe(true)
        expect(run.reason).toMatch(
          /quarantined: its run crashed 2 times \(RUN_MAX_CRASHES\) \(its runner process died or stalled while running it\)/,
        )
        holdFeed = false
        const [next] = await sendConsumerRequests(
          stack.contracts.consumer,
          stack.contracts.deployer,
          [fairGameOddsRequest()],
        )
        const fulfilled = await waitForFulfilments(
          stack.contracts.consumer,
          stack.contracts.provider,
          [next!.requestId],
          { fromBlock: next!.blockNumber, timeoutMs: 60_000 },
        )
        expect(fulfilled.size).toBe(1)
        // From the chain: the quarantined request was never answered.
        expect(await oracleResponsesSince(stack, sent!.blockNumber)).toBe(1)
      } finally {
        await stopPart(third)
      }
    } finally {
      redis.disconnect()
    }
  }, 240_000)
})
