import { describe, expect, it } from 'vitest'
import { jobTableMarkdown, loadJobSpec, summariseJob } from '../../src/pipeline/index.ts'

// What `jobs list` and the README table say of a job the catalog's specs do not show: a bridge sent
// no requestData or one variable as its data, and a job with no adapter endpoint nor callback value.

const HEADER = [
  '| spec | adapter endpoint | request parameters (`req._add`) | callback value | externalJobID |',
  '|---|---|---|---|---|',
]

describe('a job summary', () => {
  it('names the bridge of a job whose bridge task sends no requestData, with no fields', () => {
    const { job, problems } = loadJobSpec(
      `type = "cron"
schemaVersion = 1
name = "bare bridge"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f03"
schedule = "@every 1m"
observationSource = """
  fetch [type="bridge" name="prices"]
"""
`,
      'jobs/bare.toml',
    )
    expect(problems).toEqual([])
    expect(summariseJob(job!)).toMatchObject({
      file: 'jobs/bare.toml',
      name: 'bare bridge',
      bridge: 'prices',
      literals: {},
      requestParams: {},
    })
  })

  it('summarises a bridge whose requestData is one variable naming a quoted task id', () => {
    const { job, problems } = loadJobSpec(
      `type = "cron"
schemaVersion = 1
name = "data from a task"
schedule = "@every 1m"
observationSource = """
  "req-data" [type="memo" value="{}"]
  fetch [type="bridge" name="prices" requestData="$(req-data)"]
  "req-data" -> fetch
"""
`,
      'jobs/forwarded.toml',
    )
    expect(problems).toEqual([])
    expect(summariseJob(job!)).toMatchObject({ bridge: 'prices', literals: {}, requestParams: {} })
  })
})

describe('the README job table', () => {
  it('is its header alone when there are no jobs', () => {
    expect(jobTableMarkdown([])).toBe(HEADER.join('\n'))
  })

  it('shows "-" for a job with no adapter endpoint nor callback value', () => {
    const row = jobTableMarkdown([
      {
        file: 'jobs/tick.toml',
        name: 'tick',
        externalJobID: 'id-1',
        literals: {},
        requestParams: { coin: 'from', market: 'to' },
      },
    ])
    expect(row).toBe(
      [...HEADER, '| `jobs/tick.toml` | `-` | `from`, `to` | `-` | `id-1` |'].join('\n'),
    )
  })
})
