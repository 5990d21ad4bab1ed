import { afterAll, describe, expect, it } from 'vitest'
import {
  loadJobSpec,
  RunCrashedError,
  runJob,
  TaskIsolation,
  type RunResult,
} from '../../src/pipeline/index.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../src/pipeline/limits.ts'
import { abiAliasBomb, jsonWideBomb } from '../support/decode-bombs.ts'

function job(pipeline: string) {
  const { job, problems } = loadJobSpec(
    `type = "directrequest"
schemaVersion = 1
name = "isolated"
externalJobID = "7c2b1a6e-3f1d-4d7e-9a55-0b9d6a1e2c10"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
minContractPaymentLinkJuels = "0"
observationSource = """${pipeline}"""
`,
    'isolated.toml',
  )
  if (!job) throw new Error(problems.map((problem) => problem.message).join('\n'))
  return job
}

const crash = (result: RunResult) =>
  result.tasks.find((task) => task.failure?.cause instanceof RunCrashedError)

/**
 * Pure tasks run in isolates (worker threads with a bounded heap), one task each at a time: a decode
 * that builds past the heap or runs past its time ends its isolate, not the process, and the next
 * task gets a fresh one. The decode budgets are lifted here (as an operator may): the isolate is what
 * is left to hold.
 */
describe('task isolation', () => {
  // A small heap so the test needs little memory to cross it.
  const isolation = new TaskIsolation({
    threads: 1,
    memoryMb: 64,
    context: { limits: { ...DEFAULT_PIPELINE_LIMITS, decodeMaxNodes: 1e9 } },
  })
  afterAll(() => isolation.close())

  it('gives a pure task the same value in an isolate as in this thread, numbers exact', async () => {
    const spec = job(`
parse [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="data,odds"]
times [type="multiply" input="$(parse)" times="100"]
parse -> times
`)
    const jobRun = { meta: { oracleRequest: { data: '{"data":{"odds":1.605}}' } } }
    const inline = await runJob(spec, { jobRun })
    const isolated = await runJob(spec, { jobRun, isolation })
    expect(isolated.ok).toBe(true)
    expect(String(isolated.outputs[0])).toBe(String(inline.outputs[0]))
    expect(String(isolated.outputs[0])).toBe('160.5')
  })

  it('a decode that builds past the heap ends its isolate with a crash, and the next task runs', async () => {
    const spec = job(
      `parse [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="0" timeout="60s"]`,
    )
    const before = process.memoryUsage().rss
    const result = await runJob(spec, {
      jobRun: { meta: { oracleRequest: { data: jsonWideBomb(9 * 1024 * 1024) } } },
      isolation,
    })
    expect(result.ok).toBe(false)
    expect(crash(result)?.failure?.cause).toBeInstanceOf(RunCrashedError)
    expect(result.errors[0]).toMatch(
      /its isolate died: what it built passed its heap of RUN_ISOLATE_MEMORY_MB=64/,
    )
    // This process did not build the value.
    expect(process.memoryUsage().rss - before).toBeLessThan(300 * 1024 * 1024)
    const next = await runJob(
      job(`p [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="a"]`),
      {
        jobRun: { meta: { oracleRequest: { data: '{"a":1}' } } },
        isolation,
      },
    )
    expect(next.ok).toBe(true)
  }, 60_000)

  it('a task that kills its isolate fails alone: the tasks of its batch before it keep their values', async () => {
    const spec = job(`
first [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="a" timeout="10s"]
bomb  [type="jsonparse" data="$(jobRun.logData)" path="0" timeout="60s"]
first -> bomb
`)
    const before = isolation.crossings
    const result = await runJob(spec, {
      jobRun: {
        meta: { oracleRequest: { data: '{"a":1}' } },
        logData: jsonWideBomb(9 * 1024 * 1024),
      },
      isolation,
    })
    const [first, bomb] = result.tasks
    expect(first?.error).toBeUndefined()
    expect(String(first?.value)).toBe('1')
    expect(bomb?.failure?.cause).toBeInstanceOf(RunCrashedError)
    // One crossing for both, and one more to run the first again after its isolate died.
    expect(isolation.crossings - before).toBe(2)
  }, 60_000)

  it('a decode that runs past its time has its isolate ended (a synchronous loop never sees an abort)', async () => {
    const bomb = abiAliasBomb(18)
    const spec = job(`
decode [type="ethabidecodelog" abi="${bomb.abi}" data="$(jobRun.logData)" topics="$(jobRun.logTopics)" timeout="200ms"]
`)
    const result = await runJob(spec, {
      jobRun: { logData: bomb.data, logTopics: bomb.topics },
      isolation,
    })
    expect(result.ok).toBe(false)
    expect(result.errors[0]).toMatch(/did not stop; its isolate was ended|timed out after 200 ms/)
    const next = await runJob(
      job(`p [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="a"]`),
      {
        jobRun: { meta: { oracleRequest: { data: '{"a":2}' } } },
        isolation,
      },
    )
    expect(next.ok).toBe(true)
  }, 60_000)

  it("crosses into an isolate once for a run's pure tasks that follow one another, each with its value", async () => {
    const spec = job(`
parse  [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="data,odds"]
times  [type="multiply" input="$(parse)" times="100"]
encode [type="ethabiencode" abi="(uint256 value)" data="{\\\\"value\\\\": $(times)}"]
parse -> times -> encode
`)
    const jobRun = { meta: { oracleRequest: { data: '{"data":{"odds":1.605}}' } } }
    const inline = await runJob(spec, { jobRun })
    const before = isolation.crossings
    const isolated = await runJob(spec, { jobRun, isolation })
    expect(isolation.crossings - before).toBe(1)
    expect(isolated.ok).toBe(true)
    expect(isolated.tasks.map((task) => String(task.value))).toEqual(
      inline.tasks.map((task) => String(task.value)),
    )
  })

  it('gives a batched task what the tasks outside its batch ended with, as input and as variable', async () => {
    // x and y start together, so z waits for the one that ends last: it reads the other, outside
    // its batch, as an input and as a variable at once.
    const spec = job(`
x [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="a"]
y [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="b"]
z [type="multiply" input="$(x)" times="$(y)"]
x -> z
y -> z
`)
    const result = await runJob(spec, {
      jobRun: { meta: { oracleRequest: { data: '{"a":2,"b":3}' } } },
      isolation,
    })
    expect(result.errors).toEqual([])
    expect(String(result.outputs[0])).toBe('6')
  })

  it('keeps each task of a batch to its own time: the one that runs over is ended, not the one before it', async () => {
    const bomb = abiAliasBomb(18)
    const spec = job(`
parse  [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="data"]
decode [type="ethabidecodelog" abi="${bomb.abi}" data="$(jobRun.logData)" topics="$(jobRun.logTopics)" timeout="200ms"]
after  [type="multiply" input="$(parse)" times="2"]
parse -> decode -> after
`)
    const before = isolation.crossings
    const result = await runJob(spec, {
      jobRun: {
        meta: { oracleRequest: { data: '{"data":"3"}' } },
        logData: bomb.data,
        logTopics: bomb.topics,
      },
      isolation,
    })
    const [parse, decode, after] = result.tasks
    expect(parse?.ok).toBe(true)
    expect(String(parse?.value)).toBe('3')
    expect(decode?.error).toMatch(/did not stop; its isolate was ended|timed out after 200 ms/)
    // One crossing for the three; one more when the decode ran so long (a busy machine) that its
    // isolate was ended, and the parse before it ran again.
    const ended = /did not stop/.test(String(decode?.error))
    expect(isolation.crossings - before).toBe(ended ? 2 : 1)
    // The batch did not run it: it failed on its input, as it would have alone.
    expect(after?.error).toMatch(/^input from decode failed/)
    const next = await runJob(
      job(`p [type="jsonparse" data="$(jobRun.meta.oracleRequest.data)" path="a"]`),
      {
        jobRun: { meta: { oracleRequest: { data: '{"a":3}' } } },
        isolation,
      },
    )
    expect(next.ok).toBe(true)
  }, 60_000)
})
