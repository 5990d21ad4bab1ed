import { request as httpRequest } from 'node:http'
import { Queue, type Worker } from 'bullmq'
import Fastify, { type FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { requestsTotal } from '../../src/metrics/index.ts'
import { loadJobSpec, RecordingChainAccess } from '../../src/pipeline/index.ts'
import { createInitiator } from '../../src/runner/initiators.ts'
import { JobRegistry, registerJob } from '../../src/runner/job-registry.ts'
import { createPipelineWorker } from '../../src/runner/requests-worker.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { registerRunsRoute } from '../../src/runner/webhook.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { webhookSpecWithoutBridge } from '../support/webhook-spec.ts'

const JOB_ID = '5d1e7c2a-0b3f-4e6d-9a21-7c8b9d0e1f22'
// Run by the requests worker every run has.
const SPEC = webhookSpecWithoutBridge(JOB_ID)
const TOKEN = 'operator-token-'.padEnd(40, 'x')
const MAX_BODY = 4_096

describe('POST /v2/jobs/<externalJobID>/runs: a webhook job run', () => {
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('webhook')
  const runs = new RunStore(redis, `${prefix}:runner`, 31337)
  const queue = new Queue('requests-31337', { connection: redis, prefix })
  let app: FastifyInstance
  let base: string
  let worker: Worker
  let initiator: { accessKey: string; secret: string }
  let registry: JobRegistry
  const registryOf = () => registry

  beforeAll(async () => {
    const { job, problems } = loadJobSpec(SPEC, 'jobs/webhook.toml')
    expect(problems).toEqual([])
    registry = new JobRegistry([registerJob(job!)])
    initiator = (await createInitiator(redis, prefix, 'my-external-initiator-1'))!
    app = Fastify()
    registerRunsRoute(app, {
      runners: () => new Map([[31337, { registry, requestsQueue: queue, runs }]]),
      redis,
      prefix,
      operatorToken: TOKEN,
      maxBodyBytes: MAX_BODY,
      maxCallsPerMinute: 100,
      now: () => Date.now(),
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    worker = createPipelineWorker({
      queueName: 'requests-31337',
      connection: new Redis(testRedisUrl(), { maxRetriesPerRequest: null }),
      prefix,
      concurrency: 4,
      lockDurationMs: 10_000,
      registry,
      runs,
      // This job sends no transaction: a recorder stands for the sender.
      chainAccessFor: () => new RecordingChainAccess(),
      logger: pino({ level: 'silent' }),
    })
    void worker.run()
  })

  afterAll(async () => {
    await worker?.close()
    await app?.close()
    await queue.close()
    redis.disconnect()
  })

  const post = (headers: Record<string, string>, body: unknown, path = `/v2/jobs/${JOB_ID}/runs`) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })
  const asInitiator = () => ({
    'X-Chainlink-EA-AccessKey': initiator.accessKey,
    'X-Chainlink-EA-Secret': initiator.secret,
  })
  const jobsInQueue = async () => (await queue.getJobCounts()).total ?? 0

  it('an external initiator the spec names starts a run: its id at once, its result in the run record', async () => {
    const answer = await post(asInitiator(), { data: { result: 3.5 } })
    expect(answer.status).toBe(200)
    const { data } = (await answer.json()) as { data: { id: string } }
    expect(data.id).toMatch(/^0x[0-9a-f]{64}$/)
    await waitFor(
      'the run fulfilled',
      async () => (await runs.get(data.id))?.state === 'fulfilled',
      30_000,
      100,
    )
    const run = await runs.get(data.id)
    expect(run).toMatchObject({
      trigger: 'call',
      caller: 'my-external-initiator-1',
      job: 'webhook',
    })
    expect(run!.tasks!.find((task) => task.id === 'multiply')!.output).toBe('350')
    // Counted as a run of its trigger, beside the requests' runs in the same metric.
    const counted = (await requestsTotal.get()).values.filter(
      ({ labels }) =>
        labels.job === 'webhook' && labels.state === 'fulfilled' && labels.trigger === 'call',
    )
    expect(counted.reduce((sum, { value }) => sum + value, 0)).toBeGreaterThanOrEqual(1)
  })

  it("a wrong secret is 401 in the adapter's error shape and costs no run", async () => {
    const before = await jobsInQueue()
    const answer = await post({ ...asInitiator(), 'X-Chainlink-EA-Secret': 'wrong' }, { data: {} })
    expect(answer.status).toBe(401)
    expect(await answer.json()).toMatchObject({
      status: 'errored',
      statusCode: 401,
      error: { name: 'Unauthorized' },
    })
    const anonymous = await post({}, { data: {} })
    expect(anonymous.status).toBe(401)
    expect(await jobsInQueue()).toBe(before)
  })

  it('the operator token starts a run; the same body twice is two runs, one idempotency key one run', async () => {
    const bearer = { authorization: `Bearer ${TOKEN}` }
    const ids = async (headers: Record<string, string>) =>
      ((await (await post(headers, { data: { result: 1 } })).json()) as { data: { id: string } })
        .data.id
    const [one, two] = [await ids(bearer), await ids(bearer)]
    expect(one).not.toBe(two)
    const keyed = { ...bearer, 'Idempotency-Key': 'tick-42' }
    expect(await ids(keyed)).toBe(await ids(keyed))
  })

  it('an unknown job is 404, a 10 MB body is refused (413) before it is read whole', async () => {
    const unknown = await post(
      { authorization: `Bearer ${TOKEN}` },
      {},
      '/v2/jobs/00000000-0000-4000-8000-000000000000/runs',
    )
    expect(unknown.status).toBe(404)
    // The length says 10 MB; only 64 KiB are ever sent: the answer must come without the rest.
    const status = await new Promise<number>((resolve, reject) => {
      const outgoing = httpRequest(`${base}/v2/jobs/${JOB_ID}/runs`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(10 * 1024 * 1024),
          authorization: `Bearer ${TOKEN}`,
        },
      })
      outgoing.on('response', (response) => {
        resolve(response.statusCode ?? 0)
        outgoing.destroy()
      })
      outgoing.on('error', reject)
      outgoing.write(Buffer.alloc(64 * 1024, 0x20))
    })
    expect(status).toBe(413)
  })

  it('each caller makes at most RUNS_API_MAX_CALLS_PER_MINUTE calls a minute: then 429, Retry-After, no run', async () => {
    // Its own prefix: a fresh minute for the initiator and the operator, on the same jobs and queue.
    const ratePrefix = `${prefix}-rate`
    const limited = (await createInitiator(redis, ratePrefix, 'my-external-initiator-1'))!
    const rateApp = Fastify()
    registerRunsRoute(rateApp, {
      runners: () => new Map([[31337, { registry: registryOf(), requestsQueue: queue, runs }]]),
      redis,
      prefix: ratePrefix,
      operatorToken: TOKEN,
      maxBodyBytes: MAX_BODY,
      maxCallsPerMinute: 2,
      now: () => Date.now(),
    })
    await rateApp.listen({ port: 0, host: '127.0.0.1' })
    try {
      const rateBase = `http://127.0.0.1:${(rateApp.server.address() as { port: number }).port}`
      const call = (headers: Record<string, string>) =>
        fetch(`${rateBase}/v2/jobs/${JOB_ID}/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ data: { result: 1 } }),
        })
      const asLimited = {
        'X-Chainlink-EA-AccessKey': limited.accessKey,
        'X-Chainlink-EA-Secret': limited.secret,
      }
      expect((await call(asLimited)).status).toBe(200)
      expect((await call(asLimited)).status).toBe(200)
      const before = await jobsInQueue()
      const refused = await call(asLimited)
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(await refused.json()).toMatchObject({
        status: 'errored',
        statusCode: 429,
        error: {
          name: 'TooManyRequests',
          message: expect.stringContaining('RUNS_API_MAX_CALLS_PER_MINUTE (2)'),
        },
      })
      expect(await jobsInQueue()).toBe(before)
      // Another caller has a minute of its own.
      expect((await call({ authorization: `Bearer ${TOKEN}` })).status).toBe(200)
    } finally {
      await rateApp.close()
    }
  })
})
