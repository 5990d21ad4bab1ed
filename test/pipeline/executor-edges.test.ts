import { getEventListeners } from 'node:events'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { FeedrunnerError } from '../../src/config/index.ts'
import {
  loadJobSpec,
  RecordingChainAccess,
  runJob,
  TaskIsolation,
  type Job,
  type TaskOutcome,
} from '../../src/pipeline/index.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../src/pipeline/limits.ts'
import { sendJson, startTestServer, type TestServer } from './support/http-server.ts'

// The executor's edges: what a run takes from its options and its spec, how it stops, and which
// failures it reports. Every run is in this process; an HTTP server here stands for the outside.

const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const FORWARDER = '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9'

function job(observationSource: string, extra = ''): Job {
  const { job, problems } = loadJobSpec(
    `type = "directrequest"
schemaVersion = 1
name = "edges"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"
contractAddress = "${OPERATOR}"
${extra}
observationSource = """
${observationSource}
"""
`,
    'edges.toml',
  )
  if (!job) throw new Error(problems.map((problem) => problem.message).join('\n'))
  return job
}

const submit = `submit [type="ethtx" to="${OPERATOR}" data="0x01"]`

/** A stop the runner gives when it closes: retryable, so the run goes back to its queue. */
const closing = () =>
  new FeedrunnerError('the runner is closing', { kind: 'unavailable', retryable: true })

let server: TestServer
let onRequest: () => void = () => undefined
beforeAll(async () => {
  server = await startTestServer((_request, response) => {
    onRequest()
    sendJson(response, 200, { value: 1 })
  })
})
afterAll(() => server.close())
afterEach(() => {
  onRequest = () => undefined
  vi.useRealTimers()
})

describe('executor: what a run takes from its options and its spec', () => {
  it('names a run without an id as a dry run, in the idempotency key of its transactions', async () => {
    const chain = new RecordingChainAccess()
    expect((await runJob(job(submit), { chain })).ok).toBe(true)
    expect(chain.transactions[0]!.idempotencyKey).toMatch(/^dry-\d+:submit$/)
  })

  it("sends a transaction with the spec's gasLimit unless the run gives one, and with none when neither does", async () => {
    const gasOf = async (extra: string, defaultGasLimit?: bigint) => {
      const chain = new RecordingChainAccess()
      await runJob(job(submit, extra), { chain, defaultGasLimit })
      return chain.transactions[0]!.gasLimit
    }
    expect(await gasOf('gasLimit = 450000')).toBe(450000n)
    expect(await gasOf('gasLimit = 450000', 90000n)).toBe(90000n)
    expect(await gasOf('', 90000n)).toBe(90000n)
    expect(await gasOf('')).toBeUndefined()
  })

  it('goes through the forwarder only when the spec allows forwarding', async () => {
    const toOf = async (extra: string) => {
      const chain = new RecordingChainAccess()
      await runJob(job(submit, extra), { chain, forwarder: FORWARDER })
      return chain.transactions[0]!.to
    }
    expect(await toOf('forwardingAllowed = true')).toBe(FORWARDER)
    expect(await toOf('forwardingAllowed = false')).toBe(OPERATOR)
    expect(await toOf('')).toBe(OPERATOR)
  })

  it("reads bridge URLs from the process's environment unless the run gives its own", async () => {
    const bridge = job(`b [type="bridge" name="edgesenv"]`)
    process.env.BRIDGE_EDGESENV_URL = 'not a url'
    try {
      const fromProcess = await runJob(bridge)
      expect(fromProcess.errors[0]).toContain('BRIDGE_EDGESENV_URL: expected a URL such as')
      const given = await runJob(bridge, { env: {} })
      expect(given.errors).toEqual(['b: bridge edgesenv: BRIDGE_EDGESENV_URL is not set'])
    } finally {
      delete process.env.BRIDGE_EDGESENV_URL
    }
  })

  it("sets jobSpec variables from the spec's fields, with the run's own beside and over them", async () => {
    const names = job(`n [type="uppercase" input="$(jobSpec.name)"]
  id [type="lowercase" input="$(jobSpec.externalJobID)"]`)
    expect((await runJob(names)).outputs).toEqual(['EDGES', '0eec7e1d-d0d2-476c-a1a8-72dfb6633f46'])
    const renamed = await runJob(names, { jobSpec: { name: 'other' } })
    expect(renamed.outputs).toEqual(['OTHER', '0eec7e1d-d0d2-476c-a1a8-72dfb6633f46'])
  })

  it('tells the caller of each task as it finishes, in the order they finish', async () => {
    const seen: TaskOutcome[] = []
    const result = await runJob(
      job(`a [type="uppercase" input="a"]
  b [type="uppercase" input="$(a)"]`),
      { onTask: (outcome) => seen.push(outcome) },
    )
    expect(seen.map((outcome) => [outcome.id, outcome.value])).toEqual([
      ['a', 'A'],
      ['b', 'A'],
    ])
    expect(result.tasks).toEqual(seen)
  })

  it('gives a task its own timeout, else the spec\'s maxTaskDuration, and 30 s for "0s"', async () => {
    // A chain that never answers: the task ends only when its time is up.
    const silent = new (class extends RecordingChainAccess {
      override sendTransaction = () => new Promise<never>(() => undefined)
    })()
    const timedOut = async (extra: string, attributes = '') => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
      const running = runJob(job(submit.replace(']', ` ${attributes}]`), extra), { chain: silent })
      await vi.advanceTimersByTimeAsync(3_600_000)
      return (await running).errors
    }
    expect(await timedOut('maxTaskDuration = "0s"')).toEqual(['submit: timed out after 30000 ms'])
    expect(await timedOut('')).toEqual(['submit: timed out after 30000 ms'])
    expect(await timedOut('maxTaskDuration = "2m"')).toEqual(['submit: timed out after 120000 ms'])
    expect(await timedOut('maxTaskDuration = "2m"', 'timeout="3s"')).toEqual([
      'submit: timed out after 3000 ms',
    ])
  })
})

describe('executor: a run stopped from outside', () => {
  /** Runs a then b, stopping the run with `reason` as soon as a has finished. */
  const stoppedAfterA = (reason: unknown) => {
    const stop = new AbortController()
    return runJob(
      job(`a [type="uppercase" input="a"]
  b [type="uppercase" input="$(a)"]`),
      { signal: stop.signal, onTask: (outcome) => outcome.id === 'a' && stop.abort(reason) },
    )
  }

  it('runs no task once stopped, keeping a retryable stop as the failure of each', async () => {
    const reason = closing()
    const result = await stoppedAfterA(reason)
    expect(result.ok).toBe(false)
    expect(result.tasks[1]).toMatchObject({
      id: 'b',
      type: 'uppercase',
      ok: false,
      skipped: true,
      attempts: 0,
      durationMs: 0,
      error: 'not run: the run was stopped',
    })
    expect(result.errors).toEqual(['b: not run: the run was stopped'])
    expect(result.failures[0]!.cause).toBe(reason)
    expect(result.failures[0]).toMatchObject({
      name: 'TaskFailure',
      taskId: 'b',
      kind: 'unavailable',
      retryable: true,
    })
  })

  it('reports a stop that is not retryable as an internal failure that does not go back', async () => {
    for (const reason of [
      new Error('enough'),
      new FeedrunnerError('refused', { kind: 'config' }),
    ]) {
      const result = await stoppedAfterA(reason)
      expect(result.errors).toEqual(['b: not run: the run was stopped'])
      expect(result.failures[0]).toMatchObject({ kind: 'internal', retryable: false })
      expect(result.failures[0]!.cause).not.toBe(reason)
      expect((result.failures[0]!.cause as Error).message).toBe('not run: the run was stopped')
    }
  })

  it('skips the tasks after the stop and keeps those that finished before it', async () => {
    const result = await stoppedAfterA(closing())
    expect(result.tasks.map((task) => [task.id, task.ok, task.skipped])).toEqual([
      ['a', true, undefined],
      ['b', false, true],
    ])
  })

  it('starts no task when stopped before it began: the transaction is not handed to the chain', async () => {
    const stop = new AbortController()
    stop.abort(closing())
    const chain = new RecordingChainAccess()
    const result = await runJob(job(submit), { signal: stop.signal, chain })
    expect(result.tasks[0]).toMatchObject({ id: 'submit', ok: false, skipped: true, attempts: 0 })
    expect(result.failures[0]).toMatchObject({ kind: 'unavailable', retryable: true })
    expect(chain.transactions).toEqual([])
  })

  it('sends the run back when it is stopped during a task that never sends its run back', async () => {
    const stop = new AbortController()
    onRequest = () => stop.abort(closing())
    const result = await runJob(job(`h [type="http" method="GET" url="${server.url}/any"]`), {
      signal: stop.signal,
    })
    expect(result.tasks[0]).toMatchObject({ ok: false, attempts: 1 })
    expect(result.failures[0]).toMatchObject({ kind: 'unavailable', retryable: true })
  })
})

describe('executor: the failures of a run', () => {
  it('puts a failEarly task that failed first, and the tasks it stopped after it', async () => {
    const result = await runJob(
      job(`a [type="fail" msg="broken" failEarly="true"]
  b [type="uppercase" input="$(a)" failEarly="true"]
  c [type="uppercase" input="$(b)"]
  d [type="uppercase" input="d" index="1"]`),
    )
    expect(result.ok).toBe(false)
    expect(result.errors).toEqual(['a: broken', 'c: not run: the run was stopped'])
    expect(result.failures.map((failure) => failure.taskId)).toEqual(['a', 'c'])
    expect(result.outputs).toEqual([undefined, 'D'])
  })

  it('names a failEarly task that is also terminal once', async () => {
    const result = await runJob(job(`a [type="fail" msg="broken" failEarly="true"]`))
    expect(result.errors).toEqual(['a: broken'])
  })

  it('does not stop the run for a failed task without failEarly', async () => {
    const result = await runJob(
      job(`a [type="fail" msg="broken" failEarly="false"]
  b [type="uppercase" input="b"]
  a -> c
  c [type="any"]
  b -> c`),
    )
    expect(result.tasks.map((task) => [task.id, task.ok, task.skipped])).toEqual([
      ['a', false, undefined],
      ['b', true, undefined],
      ['c', true, undefined],
    ])
    expect(result.outputs).toEqual(['B'])
    expect(result.errors).toEqual([])
    expect(result.ok).toBe(true)
  })

  it('refuses a task of a type it does not know, as a setup problem, without trying it', async () => {
    const unknown = job(`a [type="uppercase" input="a"]`)
    unknown.tasks[0]!.type = 'frobnicate'
    const result = await runJob(unknown)
    expect(result.errors).toEqual(['a: unknown task type frobnicate'])
    expect(result.tasks[0]).toMatchObject({ type: 'frobnicate', attempts: 0 })
    expect(result.failures[0]).toMatchObject({ kind: 'config', retryable: false })
  })
})

describe("executor: the caller's signal and clock", () => {
  it("leaves no listener on the caller's signal once the run is over", async () => {
    const stop = new AbortController()
    const before = getEventListeners(stop.signal, 'abort').length
    await runJob(job(`a [type="uppercase" input="a"]`), { signal: stop.signal })
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(before)
  })

  it('records when each task started and how long it took, by the clock of the run', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_700_000_000_000 })
    const chain = new RecordingChainAccess()
    const result = await runJob(job(`a [type="uppercase" input="a"]\n  ${submit}`), { chain })
    expect(result.tasks.map((task) => [task.startedAt, task.durationMs])).toEqual([
      [1_700_000_000_000, 0],
      [1_700_000_000_000, 0],
    ])
    expect(chain.transactions[0]!.idempotencyKey).toBe('dry-1700000000000:submit')
  })
})

describe('executor: tasks in isolates', () => {
  const isolation = new TaskIsolation({
    threads: 1,
    memoryMb: 128,
    context: { limits: DEFAULT_PIPELINE_LIMITS },
  })
  afterAll(() => isolation.close())

  it('runs pure tasks in an isolate, given the outcomes of the tasks run here, and chain tasks here', async () => {
    const chain = new RecordingChainAccess(async () => '0xABCDEF')
    const crossings = isolation.crossings
    const result = await runJob(
      job(`read [type="ethcall" contract="${OPERATOR}" data="0x01"]
  low [type="lowercase"]
  read -> low
  ${submit}`),
      { chain, isolation },
    )
    expect(result.errors).toEqual([])
    expect(result.outputs).toEqual(['0xabcdef', { status: 'recorded' }])
    expect(chain.calls).toHaveLength(1)
    expect(chain.transactions).toHaveLength(1)
    expect(isolation.crossings - crossings).toBe(1)
  })
})
