import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isRetryable, rootCauseFirst } from '../../src/config/index.ts'
import {
  loadJobSpec,
  originOf,
  RecordingChainAccess,
  runJob,
  type Job,
} from '../../src/pipeline/index.ts'
import { Decimal } from '../../src/reduce/index.ts'
import { sendJson, startTestServer, type TestServer } from './support/http-server.ts'

function job(observationSource: string, extra = ''): Job {
  const { job, problems } = loadJobSpec(
    `type = "directrequest"
schemaVersion = 1
name = "executor test"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
${extra}
observationSource = """
${observationSource}
"""
`,
    'test.toml',
  )
  if (!job) throw new Error(problems.map((problem) => problem.message).join('\n'))
  return job
}

let server: TestServer
let flakyCalls = 0
beforeAll(async () => {
  server = await startTestServer((request, response) => {
    if (request.url === '/slow')
      return setTimeout(() => sendJson(response, 200, { ok: true }), 2_000)
    if (request.url === '/flaky') {
      flakyCalls++
      return flakyCalls < 3
        ? sendJson(response, 503, { error: 'busy' })
        : sendJson(response, 200, { value: 7 })
    }
    if (request.url === '/broken') return sendJson(response, 500, { error: 'always' })
    if (request.url === '/refuses-in-timeout-words')
      return sendJson(response, 400, { error: 'timed out: deadline exceeded, try again' })
    if (request.url === '/gateway-timeout') return sendJson(response, 504, { error: 'fine' })
    sendJson(response, 200, { value: 1 })
  })
})
afterAll(() => server.close())

describe('executor: values and variables', () => {
  it('a whole $(x) gives the typed value; JSON attributes get typed values unquoted', async () => {
    const result = await runJob(
      job(`
    m [type="multiply" input="$(jobRun.meta.oracleRequest.payment)" times="10"]
    enc [type="ethabiencode" abi="(uint256 v, string name, bytes32 id)" data="{\\\\"v\\\\": $(m), \\\\"name\\\\": $(jobSpec.name), \\\\"id\\\\": $(jobRun.meta.oracleRequest.requestId)}"]
    m -> enc
`),
      {
        jobRun: {
          meta: {
            oracleRequest: { payment: 12345678901234567890n, requestId: '0x' + '01'.repeat(32) },
          },
        },
      },
    )
    expect(result.errors).toEqual([])
    const m = result.tasks[0]!
    expect(Decimal.isDecimal(m.value)).toBe(true)
    expect((m.value as Decimal).toFixed()).toBe('123456789012345678900')
    expect(result.outputs).toHaveLength(1)
    expect(String(result.outputs[0]).length).toBe(2 + 64 * 5)
  })

  it('an omitted input takes the first edge input, in edge order', async () => {
    const result = await runJob(
      job(`
    two [type="multiply" input="2" times="1"]
    three [type="multiply" input="3" times="1"]
    m [type="multiply" times="10"]
    three -> m
    two -> m
`),
    )
    expect((result.outputs[0] as Decimal).toFixed()).toBe('30')
  })

  it('$(task) references order tasks without making them inputs', async () => {
    const result = await runJob(
      job(`
    a [type="multiply" input="4" times="1"]
    b [type="multiply" input="$(a)" times="$(a)"]
`),
    )
    expect(result.tasks.map((task) => task.id)).toEqual(['a', 'b'])
    expect((result.outputs[0] as Decimal).toFixed()).toBe('16')
  })

  it('jobSpec vars carry the spec fields', async () => {
    const result = await runJob(job(`up [type="uppercase" input="$(jobSpec.externalJobID)"]`))
    expect(result.outputs).toEqual(['0EEC7E1D-D0D2-476C-A1A8-72DFB6633F46'])
  })

  it('a failed task fails its dependents with the reason, and the run names it', async () => {
    const result = await runJob(
      job(`
    bad [type="jsonparse" path="x" data="{}"]
    up [type="uppercase"]
    bad -> up
`),
    )
    expect(result.ok).toBe(false)
    expect(result.tasks[0]!.error).toContain('path x: no value')
    expect(result.tasks[1]!.error).toBe('input from bad failed: path x: no value at "x"')
    expect(result.errors).toEqual(['up: input from bad failed: path x: no value at "x"'])
  })

  it('final outputs are the terminal tasks by index', async () => {
    const result = await runJob(
      job(`
    x [type="uppercase" input="x" index="2"]
    y [type="uppercase" input="y" index="0"]
    z [type="uppercase" input="z" index="1"]
`),
    )
    expect(result.outputs).toEqual(['Y', 'Z', 'X'])
  })
})

describe('executor: timeouts, retries, failEarly', () => {
  it('a task timeout stops a slow task', async () => {
    const result = await runJob(
      job(`slow [type="http" method="GET" url="${server.url}/slow" timeout="200ms"]`),
    )
    // Had the timeout not fired, the task would have succeeded with the server's answer after 2 s.
    expect(result.tasks[0]!.error).toMatch(/timed out/)
  })

  it('maxTaskDuration is the default timeout', async () => {
    const result = await runJob(
      job(`slow [type="http" method="GET" url="${server.url}/slow"]`, 'maxTaskDuration = "150ms"'),
    )
    expect(result.tasks[0]!.error).toMatch(/timed out after 150 ms/)
  })

  it('retries retryable failures with backoff until one succeeds', async () => {
    flakyCalls = 0
    const result = await runJob(
      job(`
    f [type="http" method="GET" url="${server.url}/flaky" retries="3" minBackoff="10ms" maxBackoff="20ms"]
    p [type="jsonparse" path="value"]
    f -> p
`),
    )
    expect(result.outputs).toEqual([7])
    expect(result.tasks[0]!.attempts).toBe(3)
  })

  it('gives up after the retries and says how often it tried; bad input is not retried', async () => {
    const result = await runJob(
      job(`f [type="http" method="GET" url="${server.url}/broken" retries="2" minBackoff="5ms"]`),
    )
    expect(result.tasks[0]!.error).toMatch(/answered 500: always \(after 3 attempts\)/)
    const final = await runJob(job(`p [type="jsonparse" path="x" data="{}" retries="5"]`))
    expect(final.tasks[0]!.attempts).toBe(1)
  })

  it('failEarly stops the run: tasks not yet started are skipped', async () => {
    const result = await runJob(
      job(`
    bad [type="jsonparse" path="x" data="{}" failEarly="true"]
    slow [type="http" method="GET" url="${server.url}/slow"]
    after [type="uppercase" input="$(slow)"]
    bad -> after
`),
    )
    expect(result.ok).toBe(false)
    expect(result.tasks.find((task) => task.id === 'after')!.skipped).toBe(true)
    expect(result.errors[0]).toContain('bad: path x: no value')
  })

  it('ethtx goes through the injected ChainAccess with the run id as idempotency key', async () => {
    const chain = new RecordingChainAccess()
    const result = await runJob(
      job(
        `tx [type="ethtx" to="0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" data="0x01"]`,
        'gasLimit = 450000',
      ),
      { chain, runId: 'r1' },
    )
    expect(result.ok).toBe(true)
    expect(chain.transactions).toEqual([
      expect.objectContaining({ idempotencyKey: 'r1:tx', gasLimit: 450000n, data: '0x01' }),
    ])
  })
})

describe('executor: hostile specs', () => {
  it('refuses task ids that would shadow run variables', () => {
    const { problems } = loadJobSpec(
      `type = "directrequest"
schemaVersion = 1
name = "x"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "1"
observationSource = """
    jobRun [type="uppercase" input="a"]
    __proto__ [type="uppercase" input="b"]
"""
`,
      'reserved.toml',
    )
    expect(problems.map((problem) => problem.task)).toEqual(['jobRun', '__proto__'])
    expect(problems[0]!.message).toContain('reserved')
  })
})

describe('executor: failures carry their kind, never read from the words', () => {
  it('a refusal worded "timed out ... try again" is bad input: not retried, not a timeout', async () => {
    const result = await runJob(
      job(
        `f [type="http" method="GET" url="${server.url}/refuses-in-timeout-words" retries="3" minBackoff="5ms"]`,
      ),
    )
    expect(result.tasks[0]!.attempts).toBe(1)
    expect(result.tasks[0]!.failure?.kind).toBe('bad_input')
    expect(result.tasks[0]!.failure?.retryable).toBe(false)
  })

  it('a 504 is a timeout whatever its words say', async () => {
    const result = await runJob(
      job(`f [type="http" method="GET" url="${server.url}/gateway-timeout"]`),
    )
    const failure = result.tasks[0]!.failure!
    expect(failure.kind).toBe('timeout')
    // Retryable by the task's own `retries`; an http task never sends the run back to its queue.
    expect(isRetryable(failure.cause)).toBe(true)
    expect(failure.retryable).toBe(false)
  })

  it("a dependent's failure keeps the origin's kind and retryable flag, and points back to it", async () => {
    const result = await runJob(
      job(`
    f [type="bridge" name="broken" requestData="{}"]
    p [type="jsonparse" path="value"]
    u [type="uppercase"]
    f -> p -> u
`),
      { env: { BRIDGE_BROKEN_URL: `${server.url}/broken` } },
    )
    const failure = result.failures[0]!
    expect(result.errors[0]).toMatch(/^u: input from p failed: input from f failed: /)
    expect(failure.kind).toBe('upstream')
    expect(failure.retryable).toBe(true)
    expect(rootCauseFirst(originOf(failure))).toBe(
      `always; bridge broken (${server.url}/broken) answered 500, task f`,
    )
  })
})
