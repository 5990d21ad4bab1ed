import { describe, expect, it } from 'vitest'
import { loadJobSpec, runJob } from '../../src/pipeline/index.ts'

// Two spellings of a spec the loader must read as a node does: a literal ''' block in a file with
// Windows line ends, and a JSON attribute that is one variable naming a quoted task id.

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
    const { job, problems } = loadJobSpec(
      `type = "cron"
schemaVersion = 1
name = "quoted"
schedule = "@every 1m"
observationSource = """
  "price-usd" [type="multiply" input=2 times=3]
  kept [type="memo" value="$(price-usd)"]
  "price-usd" -> kept
"""
`,
      'jobs/quoted.toml',
    )
    expect(problems).toEqual([])
    const result = await runJob(job!)
    expect(result.errors).toEqual([])
    expect(String(result.outputs[0])).toBe('6')
  })
})
