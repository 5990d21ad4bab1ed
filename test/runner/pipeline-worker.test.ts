import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { OracleRequestEvent } from '../../src/chain/operator.ts'
import { reviveError, rootCauseFirst } from '../../src/config/index.ts'
import { loadJobSpec, RecordingChainAccess } from '../../src/pipeline/index.ts'
import { JobRegistry, registerJob, type LoadedJob } from '../../src/runner/job-registry.ts'
import { FeedrunnerError } from '../../src/config/errors.ts'
import type { ChainAccess } from '../../src/pipeline/index.ts'
import { runRequest, type PipelineWorkerOptions } from '../../src/runner/pipeline-worker.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { sendJson, startTestServer, type TestServer } from '../pipeline/support/http-server.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

/**
 * The pipeline worker's decisions read a failure's kind, never its words: each bridge below answers
 * with words that would have fooled the old text matching ("timed out", "ECONNREFUSED", "503").
 */
const ANSWERS: Record<string, [number, string]> = {
  '/down-but-says-final': [503, 'the adapter is down; this is final, do not retry'],
  '/final-but-says-timed-out': [502, 'upstream timed out: ECONNREFUSED, answered 503'],
}

const FEED_PIPELINE = `
fetch [type="bridge" name="datafeed" requestData="{}"]
parse [type="jsonparse" path="result"]
fetch -> parse
`

function feedJob(
  name: string,
  externalJobID: string,
  minimumJuels?: string,
  pipeline = FEED_PIPELINE,
): LoadedJob {
  const { job, problems } = loadJobSpec(
    `type = "directrequest"
schemaVersion = 1
name = "${name}"
externalJobID = "${externalJobID}"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
${minimumJuels ? `minContractPaymentLinkJuels = "${minimumJuels}"` : ''}
observationSource = """${pipeline}"""
`,
    `${name}.toml`,
  )
  if (!job) throw new Error(problems.map((problem) => problem.message).join('\n'))
  return registerJob(job)
}

let sequence = 0
function requestFor(loaded: LoadedJob, payment = 0n): OracleRequestEvent {
  sequence++
  return {
    kind: 'request',
    chainId: 31337,
    operator: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    blockNumber: 1,
    blockHash: '0x' + '11'.repeat(32),
    txHash: '0x' + '22'.repeat(32),
    logIndex: 0,
    topics: [],
    logData: '0x',
    specId: loaded.specIds[0]!,
    requester: '0x1111111111111111111111111111111111111111',
    requestId: '0x' + sequence.toString(16).padStart(64, '0'),
    payment,
    callbackAddr: '0x1111111111111111111111111111111111111111',
    callbackFunctionId: '0x12345678',
    cancelExpiration: 0n,
    dataVersion: 1n,
    data: '0x',
  }
}

describe('pipeline worker: decisions by kind', () => {
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('pipeline-worker')
  const runs = new RunStore(redis, prefix)
  const jobs = {
    down: feedJob('down job', '7c2b1a6e-3f1d-4d7e-9a55-0b9d6a1e2c01'),
    final: feedJob('final job', '7c2b1a6e-3f1d-4d7e-9a55-0b9d6a1e2c02'),
    costly: feedJob('costly job', '7c2b1a6e-3f1d-4d7e-9a55-0b9d6a1e2c03', '1000'),
    // A task type the retry decision never names: its timeout is retryable because it says so.
    call: feedJob(
      'call job',
      '7c2b1a6e-3f1d-4d7e-9a55-0b9d6a1e2c04',
      undefined,
      `call [type="ethcall" contract="0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" data="0x" timeout="50ms"]`,
    ),
    send: feedJob(
      'send job',
      '7c2b1a6e-3f1d-4d7e-9a55-0b9d6a1e2c05',
      undefined,
      `${FEED_PIPELINE}
submit [type="ethtx" to="0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" data="0x"]
parse -> submit`,
    ),
  }
  let server: TestServer
  const options = (
    path: string,
    lastAttempt: boolean,
    chain: ChainAccess = new RecordingChainAccess(),
  ): PipelineWorkerOptions => ({
    queueName: 'unused',
    connection: {},
    prefix,
    concurrency: 1,
    lockDurationMs: 30_000,
    registry: new JobRegistry(Object.values(jobs)),
    runs,
    chainAccessFor: () => chain,
    runOptions: { env: { BRIDGE_DATAFEED_URL: `${server.url}${path}` } },
    logger: pino({ level: 'silent' }),
    lastAttempt,
  })

  beforeAll(async () => {
    server = await startTestServer((request, response) => {
      if (request.url === '/answers') return sendJson(response, 200, { result: '42' })
      const [status, words] = ANSWERS[request.url ?? ''] ?? [404, 'no such route']
      sendJson(response, status, { error: { message: words } })
    })
  })
  afterAll(async () => {
    await server.close()
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it('hands a run back to the queue when the bridge is unavailable, whatever its words say', async () => {
    const request = requestFor(jobs.down)
    const failure = await runRequest(request, options('/down-but-says-final', false)).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(FeedrunnerError)
    expect((failure as FeedrunnerError).kind).toBe('unavailable')
    expect((failure as FeedrunnerError).retryable).toBe(true)
    const run = await runs.get(request.requestId)
    expect(run?.state).toBe('running')
    expect(run?.reason).toMatch(/^will retry: the adapter is down; this is final, do not retry; /)
    expect(run?.failure?.kind).toBe('unavailable')
    // The request's last try records the same failure as the run's end.
    expect((await runRequest(request, options('/down-but-says-final', true))).state).toBe('errored')
    expect((await runs.get(request.requestId))?.failure?.kind).toBe('unavailable')
  })

  it('retries what the failed task declared retryable, whatever its type: an ethcall that timed out', async () => {
    const request = requestFor(jobs.call)
    const hanging: ChainAccess = {
      sendTransaction: () => new Promise(() => undefined),
      call: () => new Promise(() => undefined),
    }
    const failure = await runRequest(request, options('/unused', false, hanging)).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect((failure as FeedrunnerError).kind).toBe('timeout')
    expect((await runs.get(request.requestId))?.reason).toMatch(
      /^will retry: timed out after 50 ms/,
    )
  })

  it('hands a run back when Redis went away under its transaction (ioredis aborted the write)', async () => {
    const request = requestFor(jobs.send)
    // The sender's write on a connection Redis closes under it: ioredis's own AbortError, as in a
    // failover or a restart, with no words of ours around it.
    const writeLost: ChainAccess = {
      sendTransaction: async () => {
        const connection = new Redis(testRedisUrl())
        try {
          const id = String(await connection.client('ID'))
          const answers = await connection
            .pipeline()
            .client('KILL', 'ID', id, 'SKIPME', 'no')
            .set(`${prefix}:tx`, '1')
            .exec()
          throw answers?.find(([error]) => error)?.[0] ?? new Error('Redis did not close')
        } finally {
          connection.disconnect()
        }
      },
      call: () => Promise.reject(new Error('not called')),
    }
    const failure = await runRequest(request, options('/answers', false, writeLost)).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect((failure as FeedrunnerError).kind).toBe('unavailable')
    expect((failure as FeedrunnerError).retryable).toBe(true)
    const run = await runs.get(request.requestId)
    expect(run?.state).toBe('running')
    expect(run?.reason).toMatch(/^will retry: Command aborted due to connection close/)
  })

  it('errors a run at once when the bridge failed for good, even if its words say "timed out"', async () => {
    const request = requestFor(jobs.final)
    const outcome = await runRequest(request, options('/final-but-says-timed-out', false))
    expect(outcome.state).toBe('errored')
    const run = await runs.get(request.requestId)
    // Root cause first, then where: the bridge and its status, the task, the job, the request.
    expect(run?.reason).toBe(
      `upstream timed out: ECONNREFUSED, answered 503; bridge datafeed (${server.url}/final-but-says-timed-out) answered 502, task fetch, job final job, request ${request.requestId}`,
    )
    expect(run?.failure?.kind).toBe('upstream')
    expect(run?.tasks?.find((task) => task.id === 'fetch')?.failure?.kind).toBe('upstream')
    // The stored failure revives as the same kind with the same words.
    const revived = reviveError(run?.failure)
    expect(revived.kind).toBe('upstream')
    expect(rootCauseFirst(revived)).toBe(run?.reason)
  })

  it('records a refusal with its kind', async () => {
    const request = requestFor(jobs.costly, 1n)
    const outcome = await runRequest(request, options('/final-but-says-timed-out', false))
    expect(outcome.state).toBe('refused')
    const run = await runs.get(request.requestId)
    expect(run?.reason).toMatch(/^payment 0\.000000000000000001 LINK is below/)
    expect(run?.failure?.kind).toBe('bad_input')
  })

  it('refuses a request past its cancelExpiration before any task runs, unless its run had a transaction out', async () => {
    const asked: string[][] = []
    const expired = (out: boolean): PipelineWorkerOptions => ({
      ...options('/final-but-says-timed-out', false),
      chainTime: async () => 1_000,
      transactionOut: async (keys) => {
        asked.push([...keys])
        return out
      },
    })
    const request = { ...requestFor(jobs.send), cancelExpiration: 1_000n }
    expect((await runRequest(request, expired(false))).state).toBe('refused')
    const run = await runs.get(request.requestId)
    expect(run?.reason).toMatch(/^the request passed its cancelExpiration at 1970-01-01T00:16:40/)
    expect(run?.tasks ?? []).toHaveLength(0)
    // It asked the sender about the job's ethtx tasks, by their idempotency keys (run id : task id).
    expect(asked[0]).toHaveLength(1)
    expect(asked[0]?.[0]).toMatch(/:submit$/)
    // A run that sent before it was stopped goes on (its bridge fails for good here: it ran).
    const sent = { ...requestFor(jobs.send), cancelExpiration: 1_000n }
    expect((await runRequest(sent, expired(true))).state).toBe('errored')
    expect((await runs.get(sent.requestId))?.tasks?.length).toBeGreaterThan(0)
  })
})
