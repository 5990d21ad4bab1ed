import { describe, expect, it } from 'vitest'
import {
  jobTableMarkdown,
  loadJobSpec,
  summariseJob,
  type JobSummary,
} from '../../src/pipeline/index.ts'

// What `jobs list` and the README table say of a job the catalog's specs do not show: a bridge sent
// no requestData or one variable as its data, and a job with no adapter endpoint nor callback value.

const HEADER = [
  '| spec | adapter endpoint | request parameters (`req._add`) | callback value | externalJobID |',
  '|---|---|---|---|---|',
]

/** The summary of a spec that loads without a problem. */
function summaryOf(text: string, file: string): JobSummary {
  const { job, problems } = loadJobSpec(text, file)
  expect(problems).toEqual([])
  return summariseJob(job!)
}

describe('a job summary', () => {
  it('names the bridge of a job whose bridge task sends no requestData, with no fields', () => {
    const summary = summaryOf(
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
    expect(summary).toMatchObject({
      file: 'jobs/bare.toml',
      name: 'bare bridge',
      bridge: 'prices',
      literals: {},
      requestParams: {},
    })
  })

  it('summarises a bridge whose requestData is one variable naming a quoted task id', () => {
    const summary = summaryOf(
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
    expect(summary).toMatchObject({ bridge: 'prices', literals: {}, requestParams: {} })
  })
})

describe("a job summary's fields", () => {
  it('has no bridge nor fields for a job without a bridge task', () => {
    const summary = summaryOf(
      `type = "cron"
schemaVersion = 1
name = "no bridge"
schedule = "@every 1m"
observationSource = """
  value [type="memo" value="7"]
"""
`,
      'jobs/no-bridge.toml',
    )
    expect(summary).toMatchObject({ name: 'no bridge', literals: {}, requestParams: {} })
    expect(summary.bridge).toBeUndefined()
  })

  // A field filled from the request's CBOR is a request parameter; one filled from another task's
  // keypath is neither a parameter nor a literal; text as written is a literal.
  it('reads the literals and the CBOR parameters of the bridge data, and no other variable', () => {
    const summary = summaryOf(
      `type = "directrequest"
schemaVersion = 1
name = "mixed data"
contractAddress = "0x3cCad4715152693fE3BC4460591e3D3Fbd071b42"
observationSource = """
  decode_log [type="ethabidecodelog" abi="OracleRequest(bytes32 indexed specId, address requester, bytes32 requestId, uint256 payment, address callbackAddr, bytes4 callbackFunctionId, uint256 cancelExpiration, uint256 dataVersion, bytes data)" data="$(jobRun.logData)" topics="$(jobRun.logTopics)"]
  decode_cbor [type="cborparse" data="$(decode_log.data)"]
  other [type="memo" value="1"]
  fetch [type="bridge" name="feeds" requestData="{\\\\"data\\\\": {\\\\"endpoint\\\\": \\\\"weather\\\\", \\\\"city\\\\": $(decode_cbor.town), \\\\"scale\\\\": $(other.value), \\\\"days\\\\": 3}}"]
  decode_log -> decode_cbor -> fetch
  other -> fetch
"""
`,
      'jobs/mixed.toml',
    )
    expect(summary.literals).toEqual({ endpoint: 'weather' })
    expect(summary.requestParams).toEqual({ city: 'town' })
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
