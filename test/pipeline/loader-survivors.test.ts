import { describe, expect, it } from 'vitest'
import { loadJobSpec, runJob } from '../../src/pipeline/index.ts'

// Spellings of a spec the loader must read as a node does: a literal ''' block in a file with
// Windows line ends, and an attribute that is one variable naming a quoted task id (`$(price-usd)`,
// which a `$(...)` inside a text cannot name).

/** A spec whose memo task reads the quoted task "price-usd" as its whole value; `edge` may link them. */
function quoted(edge: string): string {
  return `type = "cron"
schemaVersion = 1
name = "quoted"
schedule = "@every 1m"
observationSource = """
  "price-usd" [type="multiply" input=2 times=3]
  kept [type="memo" value="$(price-usd)"]${edge}
"""
`
}

describe('the loader', () => {
  it("places a problem on its line in a CRLF file whose DOT text is a ''' block", () => {
    const text = [
      'type = "cron"',
      'schemaVersion = 1',
      'name = "crlf"',
      'schedule = "@every 1m"',
      "observationSource = '''",
      '  a [type="bogus"]',
      "'''",
      '',
    ].join('\r\n')
    const { job, problems } = loadJobSpec(text, 'jobs/crlf.toml')
    expect(job).toBeUndefined()
    expect(problems).toEqual([
      expect.objectContaining({
        task: 'a',
        line: 6,
        message: expect.stringMatching(/^unknown task type "bogus"/),
      }),
    ])
  })

  it('takes a JSON attribute that is one variable naming a quoted task id, and the run reads it', async () => {
    const { job, problems } = loadJobSpec(quoted('\n  "price-usd" -> kept'), 'jobs/quoted.toml')
    expect(problems).toEqual([])
    const result = await runJob(job!)
    expect(result.errors).toEqual([])
    expect(String(result.outputs[0])).toBe('6')
  })

  it('runs the task a whole-variable attribute names after it, with no edge written', async () => {
    const { job, problems } = loadJobSpec(quoted(''), 'jobs/quoted.toml')
    expect(problems).toEqual([])
    const result = await runJob(job!)
    expect(result.errors).toEqual([])
    expect(result.outputs.map(String)).toEqual(['6'])
  })

  it('refuses a whole-variable attribute naming no task, as it refuses $(nosuch)', () => {
    const { job, problems } = loadJobSpec(
      quoted('').replace('$(price-usd)', '$(price-eur)'),
      'jobs/quoted.toml',
    )
    expect(job).toBeUndefined()
    expect(problems.map((problem) => problem.message)).toEqual([
      'value refers to $(price-eur), but there is no task price-eur',
    ])
  })
})
