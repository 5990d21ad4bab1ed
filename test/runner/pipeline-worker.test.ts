import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { OracleRequestEvent } from '../../src/chain/operator.ts'
import { reviveError, rootCauseFirst } from '../../src/config/index.ts'
import { loadJobSpec, RecordingChainAccess } from '../../src/pipeline/index.ts'
import { asFailedReason, failedReasonError } from '../../src/queue/failed-reason.ts'
import { JobRegistry, registerJob, type LoadedJob } from '../../src/runner/job-registry.ts'
import {
  runRequest,
  TransientRunError,
  type PipelineWorkerOptions,
} from '../../src/runner/pipeline-worker.ts'
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

function feedJob(name: string, externalJobID: string, minimumJuels?: string): LoadedJob {
  const { job, problems } = loadJobSpec(
    `type = "directrequest"
schemaVersion = 1
name = "${name}"
externalJobID = "${externalJobID}"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
${minimumJuels ? `minContractPaymentLinkJuels = "${minimumJuels}"` : ''}
observationSource = """
fetch [type="bridge" name="datafeed" requestData="{}"]
parse [type="jsonparse" path="result"]
fetch -> parse
"""
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
  }
  let server: TestServer
  const options = (path: string, retryTransient: boolean): PipelineWorkerOptions => ({
    queueName: 'unused',
    connection: {},
    prefix,
    concurrency: 1,
    lockDurationMs: 30_000,
    registry: new JobRegistry(Object.values(jobs)),
    runs,
    chainAccessFor: () => new RecordingChainAccess(),
    runOptions: { env: { BRIDGE_DATAFEED_URL: `${server.url}${path}` } },
    logger: pino({ level: 'silent' }),
    retryTransient,
  })

  beforeAll(async () => {
    server = await startTestServer((request, response) => {
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
    const failure = await runRequest(request, options('/down-but-says-final', true)).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(TransientRunError)
    expect((failure as TransientRunError).kind).toBe('unavailable')
    const run = await runs.get(request.requestId)
    expect(run?.state).toBe('running')
    expect(run?.reason).toMatch(/^will retry: the adapter is down; this is final, do not retry; /)
    expect(run?.failure?.kind).toBe('unavailable')
    // What BullMQ keeps as the failed reason comes back as the same kind in another process.
    const revived = failedReasonError(asFailedReason(failure).message)
    expect(revived.kind).toBe('unavailable')
    expect(revived.retryable).toBe(true)
  })

  it('errors a run at once when the bridge failed for good, even if its words say "timed out"', async () => {
    const request = requestFor(jobs.final)
    const outcome = await runRequest(request, options('/final-but-says-timed-out', true))
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
    const outcome = await runRequest(request, options('/final-but-says-timed-out', true))
    expect(outcome.state).toBe('refused')
    const run = await runs.get(request.requestId)
    expect(run?.reason).toMatch(/^payment 0\.000000000000000001 LINK is below/)
    expect(run?.failure?.kind).toBe('bad_input')
  })
})
