import { describe, expect, it } from 'vitest'
import {
  isDirectRequest,
  isJobType,
  loadJobSpec,
  type SpecProblem,
} from '../../src/pipeline/index.ts'
import { checkFields, keyLine } from '../../src/pipeline/job-spec/fields.ts'
import { allSpecFields } from '../../src/pipeline/job-spec/job-types.ts'

// The spec's TOML fields at their edges: how a refused value is shown (a string cut at 80 characters,
// a list by its length, a table as a table), an unknown field's remedy, and the line a problem names.

const SOURCE = `observationSource = """
  a [type="multiply" input="2" times="3"]
"""
`

/** A cron spec with `extra` lines between its head and its source; `name` replaced when given. */
function cron(extra = '', name = 'name = "edges"'): string {
  return `type = "cron"
schemaVersion = 1
${name}
schedule = "@every 1m"
${extra}
${SOURCE}`
}

function problemsOf(text: string): SpecProblem[] {
  const { job, problems } = loadJobSpec(text, 'jobs/edges.toml')
  expect(job).toBeUndefined()
  return problems
}

const CRON_FIELDS =
  'type, schemaVersion, name, externalJobID, maxTaskDuration, gasLimit, forwardingAllowed, observationSource, schedule, evmChainID'

describe('a refused value, as the problem shows it', () => {
  it('a string of up to 80 characters quoted whole, a longer one cut to 77 and "..."', () => {
    const exact = 'z'.repeat(78) // 80 characters once quoted
    expect(problemsOf(cron().replace('schemaVersion = 1', `schemaVersion = "${exact}"`))).toEqual([
      {
        file: 'jobs/edges.toml',
        line: 2,
        field: 'schemaVersion',
        jobType: 'cron',
        message: `schemaVersion must be 1, got "${exact}"`,
      },
    ])
    const long = 'z'.repeat(100)
    const [problem] = problemsOf(cron().replace('"@every 1m"', `"${long}"`))
    expect(problem!.field).toBe('schedule')
    expect(problem!.line).toBe(4)
    expect(problem!.message).toMatch(new RegExp(`, got "${'z'.repeat(76)}\\.\\.\\."$`))
  })

  it('a list by its length, a table as "a table", a number as written', () => {
    expect(problemsOf(cron('', 'name = ["a", "b"]')).map((problem) => problem.message)).toEqual([
      'name must be a non-empty string, got a list of 2',
    ])
    expect(problemsOf(cron('', 'name = { a = 1 }')).map((problem) => problem.message)).toEqual([
      'name must be a non-empty string, got a table',
    ])
    expect(problemsOf(cron('', 'name = 12')).map((problem) => problem.message)).toEqual([
      'name must be a non-empty string, got 12',
    ])
  })

  it('a null (from a document not read from TOML) as null, not as a table', () => {
    const text = cron()
    const { problems } = checkFields(
      { type: 'cron', schemaVersion: 1, name: null, schedule: '@every 1m', observationSource: 'a' },
      text,
      'jobs/edges.toml',
    )
    expect(problems.map((problem) => problem.message)).toEqual([
      'name must be a non-empty string, got null',
    ])
  })

  it("a custom check's own words: the schedule's problem, not a generic one", () => {
    const [problem] = problemsOf(cron().replace('"@every 1m"', '"0 */5 * * * *"'))
    expect(problem!.field).toBe('schedule')
    expect(problem!.message).toMatch(
      /^schedule needs a time zone \(CRON_TZ=\.\.\.\) or the @every form/,
    )
    expect(problem!.message).toMatch(/, got "0 \*\/5 \* \* \* \*"$/)
  })
})

describe('an unknown field', () => {
  it('that no job type takes lists what this one takes, and nothing more', () => {
    expect(problemsOf(cron('colour = "red"'))).toEqual([
      {
        file: 'jobs/edges.toml',
        line: 5,
        field: 'colour',
        jobType: 'cron',
        message: `unknown field colour: a cron spec takes ${CRON_FIELDS}`,
      },
    ])
  })

  it('that another job type takes says which', () => {
    const [problem] = problemsOf(cron('contractAddress = "0x0"'))
    expect(problem!.message).toBe(
      `unknown field contractAddress: a cron spec takes ${CRON_FIELDS} (contractAddress is a field of directrequest, fluxmonitor specs)`,
    )
  })

  it('with an empty name is named with no line (no line of the spec is its line)', () => {
    const problems = problemsOf(cron('"" = 2'))
    expect(problems).toEqual([
      {
        file: 'jobs/edges.toml',
        field: '',
        jobType: 'cron',
        message: `unknown field : a cron spec takes ${CRON_FIELDS}`,
      },
    ])
    expect(keyLine('"" = 2\n = 3', '')).toBeUndefined()
  })

  it('with a dash or a dot in its name is found on its own line, bare or quoted, not on a look-alike', () => {
    const looks = problemsOf(cron('mykey = 1\nmy-key = 2'))
    expect(looks.map((found) => [found.field, found.line])).toEqual([
      ['mykey', 5],
      ['my-key', 6],
    ])
    const dashed = problemsOf(cron('"my-key" = 2\nmykey = 1'))
    expect(dashed.map((found) => [found.field, found.line])).toEqual([
      ['my-key', 5],
      ['mykey', 6],
    ])
    expect(keyLine('a.b = 1\n"a.b" = 2', 'a.b')).toBe(1)
    expect(keyLine('axb = 1\n"a.b" = 2', 'a.b')).toBe(2)
  })
})

describe('the job type', () => {
  it('must be a string: a list holding a job type is refused, not read as that type', () => {
    const problems = problemsOf(cron().replace('type = "cron"', 'type = ["cron"]'))
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ line: 1, field: 'type' })
    expect(problems[0]!.message).toMatch(/^type a list of 1 is not a job type feedrunner runs: /)
    expect(isJobType(['cron'])).toBe(false)
    expect(isJobType('cron')).toBe(true)
  })

  it('directrequest is told apart from the others', () => {
    const request = loadJobSpec(
      `type = "directrequest"
schemaVersion = 1
name = "edges"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
${SOURCE}`,
      'jobs/request.toml',
    )
    expect(request.problems).toEqual([])
    expect(isDirectRequest(request.job!.spec)).toBe(true)
    const tick = loadJobSpec(cron(), 'jobs/tick.toml')
    expect(tick.problems).toEqual([])
    expect(isDirectRequest(tick.job!.spec)).toBe(false)
  })

  it('every field of every job type is a row of the conformance table, each once', () => {
    const fields = allSpecFields()
    expect(new Set(fields).size).toBe(fields.length)
    for (const field of [
      'type',
      'name',
      'observationSource',
      'schedule',
      'contractAddress',
      'externalInitiators',
      'evmChainID',
    ])
      expect(fields).toContain(field)
  })
})

describe("a webhook's external initiators", () => {
  const webhook = (initiators: string) => `type = "webhook"
schemaVersion = 1
name = "hook"
externalInitiators = [${initiators}]
${SOURCE}`

  it('take a spec as JSON text or as a table', () => {
    const { job, problems } = loadJobSpec(
      webhook('{ name = "ei-1", spec = "{\\"foo\\": 42}" }, { name = "ei-2", spec = { foo = 1 } }'),
      'jobs/hook.toml',
    )
    expect(problems).toEqual([])
    expect(job!.spec).toMatchObject({
      externalInitiators: [
        { name: 'ei-1', spec: '{"foo": 42}' },
        { name: 'ei-2', spec: { foo: 1 } },
      ],
    })
  })

  it('refuse a spec that is text but not JSON, naming the element', () => {
    const problems = problemsOf(webhook('{ name = "ei-1", spec = "{foo" }'))
    expect(problems).toEqual([
      {
        file: 'jobs/edges.toml',
        line: 4,
        field: 'externalInitiators',
        jobType: 'webhook',
        message: 'externalInitiators[0][spec] must be JSON text, such as "{}", got "{foo"',
      },
    ])
  })
})
