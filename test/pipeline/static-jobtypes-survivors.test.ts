import { describe, expect, it } from 'vitest'
import { loadJobSpec, runJob, type Job } from '../../src/pipeline/index.ts'

// What the job types' declarations (fields, their words, run variables) make a spec author see:
// the exact message of a field refused, the values a field is read as, the job types a spec may
// name, the variables a run of each type has, and two readings of the DOT text and of a bridge's
// data that no catalog spec exercises.

const OPERATOR = '0x3cCad4715152693fE3BC4460591e3D3Fbd071b42'
const TASK = 'a [type="multiply" input=2 times=3]'

/** A spec of `type` with `lines` (TOML) and one pipeline. */
function spec(type: string, lines: readonly string[], pipeline = TASK): string {
  return `type = "${type}"
${lines.join('\n')}
observationSource = """
  ${pipeline}
"""
`
}

const directrequest = (...lines: string[]) =>
  spec('directrequest', [
    'schemaVersion = 1',
    'name = "n"',
    `contractAddress = "${OPERATOR}"`,
    ...lines,
  ])
const fluxmonitor = (pipeline: string) =>
  spec(
    'fluxmonitor',
    [
      'schemaVersion = 1',
      'name = "flux"',
      `contractAddress = "${OPERATOR}"`,
      'idleTimerPeriod = "1m"',
      'pollTimerPeriod = "1m"',
    ],
    pipeline,
  )

/** Each problem of loading `text`, as `field: message`. */
function messagesOf(text: string): string[] {
  const { job, problems } = loadJobSpec(text, 'jobs/spec.toml')
  expect(job === undefined).toBe(problems.length > 0)
  return problems.map((problem) => `${problem.field ?? ''}: ${problem.message}`)
}

/** The job `text` loads as, without a problem. */
function jobOf(text: string): Job {
  const { job, problems } = loadJobSpec(text, 'jobs/spec.toml')
  expect(problems).toEqual([])
  return job!
}

describe('the run variables of a job type', () => {
  it("gives a directrequest run its Operator's address as $(jobSpec.contractAddress)", async () => {
    const job = jobOf(
      directrequest().replace(TASK, 'a [type="memo" value="$(jobSpec.contractAddress)"]'),
    )
    expect((await runJob(job)).outputs).toEqual([OPERATOR])
  })

  it("gives a fluxmonitor run its aggregator's address and the meta it is run with", async () => {
    const address = jobOf(fluxmonitor('a [type="memo" value="$(jobSpec.contractAddress)"]'))
    expect((await runJob(address)).outputs).toEqual([OPERATOR])
    const meta = jobOf(fluxmonitor('a [type="memo" value="$(jobRun.meta)"]'))
    const given = { latestAnswer: '5', updatedAt: '1700000000' }
    expect((await runJob(meta, { jobRun: { meta: given } })).outputs).toEqual([given])
  })

  it('names the variables a fluxmonitor run has when a spec reads one it has not', () => {
    expect(messagesOf(fluxmonitor('a [type="memo" value="$(jobRun.requestBody)"]'))).toEqual([
      expect.stringContaining('a fluxmonitor run has no jobRun.requestBody (it has jobRun.meta)'),
    ])
    expect(messagesOf(fluxmonitor('a [type="memo" value="$(jobSpec.pipelineSpec)"]'))).toEqual([
      expect.stringContaining(
        'a fluxmonitor run has no jobSpec.pipelineSpec (it has jobSpec.databaseID, jobSpec.name, jobSpec.externalJobID, jobSpec.evmChainID, jobSpec.gasLimit, jobSpec.contractAddress)',
      ),
    ])
  })
})
