import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { printRun } from '../../src/cli/run-view.ts'
import type { SerialisedError } from '../../src/config/errors.ts'
import { loadJobSpec, runJob } from '../../src/pipeline/index.ts'
import { runFailures } from '../../src/runner/run-outcomes.ts'
import { taskRecord } from '../../src/runner/run-fields.ts'
import { serialiseError } from '../../src/config/errors.ts'
import type { RunRecord } from '../../src/runner/run-record.ts'
import { sendJson, startTestServer, type TestServer } from '../pipeline/support/http-server.ts'

// `runs show` of a run whose bridge was refused: the chain of causes is said once (root cause first
// in the reason, in full at the task where it began), not again, longer, on every task after it;
// --json lists no message twice in a row, and its times come in the order they happened.

const REFUSAL = 'no soccer game with homeTeam Manchester United on date 2024-01-01 in league epl'
const REQUEST_ID = `0x${'5a'.repeat(32)}`

let server: TestServer
beforeAll(async () => {
  server = await startTestServer((_request, response) =>
    sendJson(response, 404, { error: REFUSAL }),
  )
})
afterAll(() => server.close())

/** The run record the runner writes for a run of the game-odds shape whose bridge answers 404. */
async function erroredRun(times: RunRecord['times']): Promise<RunRecord> {
  const { job } = loadJobSpec(
    `type = "directrequest"
schemaVersion = 1
name = "datafeed game-odds"
externalJobID = "3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e01"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
observationSource = """
fetch [type="bridge" name="datafeed" requestData="{}"]
parse [type="jsonparse" path="data,result"]
encode_data [type="ethabiencode" abi="(uint256 value)" data="{\\\\"value\\\\": $(parse)}"]
submit [type="uppercase"]
fetch -> parse -> encode_data -> submit
"""
`,
    'game-odds.toml',
  )
  const result = await runJob(job!, { env: { BRIDGE_DATAFEED_URL: server.url } })
  expect(result.ok).toBe(false)
  const [failure] = runFailures(
    { requestId: REQUEST_ID } as Parameters<typeof runFailures>[0],
    'datafeed game-odds',
    result.failures,
  )
  return {
    requestId: REQUEST_ID,
    chainId: 31337,
    operator: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    job: 'datafeed game-odds',
    externalJobId: '3f1c7d2a-6b1e-4f0a-9c55-0a1b2c3d4e01',
    state: 'errored',
    reason: 'the reason',
    failure: serialiseError(failure),
    requester: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    payment: '0',
    blockNumber: 20,
    requestTxHash: `0x${'77'.repeat(32)}`,
    tasks: result.tasks.map((task) => taskRecord(task)),
    times,
  }
}

function printed(run: RunRecord, reconciledAt: number | undefined, json = false): string {
  const lines: string[] = []
  const log = vi.spyOn(console, 'log').mockImplementation((text: unknown) => {
    lines.push(String(text))
  })
  const error = vi.spyOn(console, 'error').mockImplementation(() => undefined)
  try {
    printRun(run, { reconciledAt }, { json })
  } finally {
    log.mockRestore()
    error.mockRestore()
  }
  return lines.join('\n')
}

function repeatedLinks(failure: SerialisedError | undefined): string[] {
  if (!failure) return []
  const chain = [failure.message, ...failure.causes.map((cause) => cause.message)]
  return chain.filter((message, at) => at > 0 && message === chain[at - 1])
}

describe('runs show of an errored run', () => {
  // Redis's clock, as update-run.lua writes it: received, then running, then errored.
  const times = {
    errored: 1_800_000_000_900,
    received: 1_800_000_000_000,
    running: 1_800_000_000_100,
  }

  it('says the refusal once in the tasks, where it began; each task after it names the task it failed by', async () => {
    const run = await erroredRun(times)
    const text = printed(run, undefined)
    const rows = text.split('\n').filter((line) => /^(fetch|parse|encode_data|submit) /.test(line))
    expect(rows).toHaveLength(4)
    expect(rows[0]).toContain(`FAILED: bridge datafeed (${server.url}/) answered 404`)
    // The third column is how long the task took (ms): whatever this machine's speed made it.
    const shown = rows
      .slice(1)
      .map((row) => row.replace(/\s+/g, ' ').replace(/ \d+ FAILED/, ' _ FAILED'))
    expect(shown).toEqual([
      'parse jsonparse _ FAILED because fetch failed',
      'encode_data ethabiencode _ FAILED because parse failed',
      'submit uppercase _ FAILED because encode_data failed',
    ])
    expect(text.split(REFUSAL)).toHaveLength(2)
  })

  it('--json: no message twice in a row, times in the order they came, checked only after received', async () => {
    const run = await erroredRun(times)
    const before = JSON.parse(printed(run, times.received - 60_000, true)) as RunRecord & {
      checkedAgainstChain: string
    }
    expect(repeatedLinks(before.failure)).toEqual([])
    for (const task of before.tasks ?? []) expect(repeatedLinks(task.failure), task.id).toEqual([])
    expect(Object.keys(before.times)).toEqual(['received', 'running', 'errored'])
    // The reconciler's last pass came before this run was received: it said nothing of it.
    expect(before.checkedAgainstChain).toBe('not yet')
    const after = JSON.parse(printed(run, times.errored + 5_000, true)) as {
      checkedAgainstChain: string
    }
    expect(after.checkedAgainstChain).toBe(new Date(times.errored + 5_000).toISOString())
    const readable = printed(run, times.received - 60_000)
    expect(readable).toMatch(/^checked against the chain\s+not yet$/m)
  })
})
