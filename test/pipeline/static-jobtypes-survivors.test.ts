import { describe, expect, it } from 'vitest'
import { loadJobSpec, runJob, summariseJob, type Job } from '../../src/pipeline/index.ts'

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

const cron = (...lines: string[]) =>
  spec('cron', ['schemaVersion = 1', 'name = "n"', 'schedule = "@every 1m"', ...lines])
const webhook = (...lines: string[]) => spec('webhook', ['schemaVersion = 1', ...lines])
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

describe('a field refused, in the words of what it takes', () => {
  it('says what a missing schemaVersion is for', () => {
    expect(messagesOf(cron().replace('schemaVersion = 1\n', ''))).toEqual([
      'schemaVersion: schemaVersion is required in a cron spec: the spec format version, 1',
    ])
  })

  it('says what a schedule, an initiator list and an initiator name take', () => {
    expect(messagesOf(cron().replace('"@every 1m"', '5'))).toEqual([
      'schedule: schedule must be a schedule such as "CRON_TZ=UTC 0 */5 * * * *" or "@every 30s", got 5',
    ])
    expect(messagesOf(webhook('externalInitiators = "my-ei"'))).toEqual([
      'externalInitiators: externalInitiators must be a list of { name = "...", spec = "{...}" } tables, as in [{ name = "my-ei", spec = "{}" }], got "my-ei"',
    ])
    // Only letters, digits, "-" and "_", the whole name: a name ending in a good one is no better.
    for (const name of ['my ei', 'ei!'])
      expect(messagesOf(webhook(`externalInitiators = [{ name = "${name}" }]`))).toEqual([
        expect.stringMatching(
          new RegExp(`\\[name\\] must be 1-64 letters, digits, "-" or "_", got "${name}"$`),
        ),
      ])
    expect(messagesOf(webhook('externalInitiators = [{ name = "my-ei_2" }]'))).toEqual([])
  })

  it('says what an address, a duration and an externalJobID take', () => {
    const lowered = OPERATOR.replace('cC', 'cc')
    expect(messagesOf(directrequest().replace(OPERATOR, lowered))).toEqual([
      `contractAddress: contractAddress must be a 0x-prefixed 20-byte address with a valid EIP-55 checksum, got "${lowered}"`,
    ])
    expect(messagesOf(cron('maxTaskDuration = "soon"'))).toEqual([
      'maxTaskDuration: maxTaskDuration must be a duration such as "30s", "1m" or "0s" (no limit), got "soon"',
    ])
    // A UUID with anything before or after it is not one.
    for (const id of [
      'x0eec7e1d-d0d2-476c-a1a8-72dfb6633f46',
      '0eec7e1d-d0d2-476c-a1a8-72dfb6633f46x',
    ])
      expect(messagesOf(cron(`externalJobID = "${id}"`))).toEqual([
        `externalJobID: externalJobID must be a UUID such as "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46", got "${id}"`,
      ])
  })

  it('refuses a name of spaces only, and takes a spaced name without its spaces', () => {
    expect(messagesOf(cron().replace('name = "n"', 'name = "   "'))).toEqual([
      'name: name must be a non-empty string, got "   "',
    ])
    expect(jobOf(cron().replace('name = "n"', 'name = " spaced "')).spec.name).toBe('spaced')
  })
})

describe("a directrequest spec's minIncomingConfirmations", () => {
  it('takes a count of blocks given as text, spaces around it, as the number', () => {
    for (const [given, blocks] of [
      ['"5"', 5],
      ['" 5 "', 5],
      ['"5 "', 5],
      ['"10"', 10],
      ['"1000"', 1000],
      ['7', 7],
    ] as const)
      expect(jobOf(directrequest(`minIncomingConfirmations = ${given}`)).spec).toMatchObject({
        minIncomingConfirmations: blocks,
      })
  })

  it('refuses text that is more than a count, in the words of what it takes', () => {
    for (const given of ['x5', '5 blocks', '12345'])
      expect(messagesOf(directrequest(`minIncomingConfirmations = "${given}"`))).toEqual([
        `minIncomingConfirmations: minIncomingConfirmations must be a whole number of blocks from 0 to 1000, got "${given}"`,
      ])
  })
})

describe('the job types a spec may name', () => {
  const runs =
    "feedrunner runs directrequest (a run per OracleRequest log of the Operator at contractAddress (the requester's payment)); " +
    'cron (a run per tick of its schedule, once across every runner sharing the Redis); ' +
    'webhook (a run per authorised POST /v2/jobs/<externalJobID>/runs, its JSON body as $(jobRun.requestBody)); ' +
    'fluxmonitor (a submission to the FluxAggregator at contractAddress per round it should answer: past the threshold, on the heartbeat, or a round another oracle started)'

  it('says what starts a run of each, to a spec whose type is unknown or missing', () => {
    expect(messagesOf(cron().replace('"cron"', '"cronjob"'))).toEqual([
      `type: type "cronjob" is not a job type feedrunner runs: ${runs}`,
    ])
    expect(messagesOf(cron().replace('type = "cron"\n', ''))).toEqual([
      `type: type is required: the job type; ${runs}`,
    ])
  })
})

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

describe('a bare numeral in the DOT text', () => {
  it('keeps every digit of one that starts at its point', async () => {
    for (const numeral of ['.123456789012345678901', '-.123456789012345678901']) {
      const job = jobOf(cron().replace(TASK, `a [type="multiply" input=${numeral} times=1]`))
      expect(job.tasks[0]?.attributes.input).toBe(numeral)
      expect((await runJob(job)).outputs.map(String)).toEqual([numeral.replace('.', '0.')])
    }
  })
})

describe("a job summary's literals", () => {
  // JSON escapes let a literal spell a variable (`\u0024` is `$`): the bridge is sent the text.
  it('lists as a literal a text that only contains what looks like a request parameter', () => {
    const text = `type = "directrequest"
schemaVersion = 1
name = "escaped data"
contractAddress = "${OPERATOR}"
observationSource = '''
  decode_log [type="ethabidecodelog" abi="OracleRequest(bytes32 indexed specId, address requester, bytes32 requestId, uint256 payment, address callbackAddr, bytes4 callbackFunctionId, uint256 cancelExpiration, uint256 dataVersion, bytes data)" data="$(jobRun.logData)" topics="$(jobRun.logTopics)"]
  decode_cbor [type="cborparse" data="$(decode_log.data)"]
  fetch [type="bridge" name="feeds" requestData="{\\"data\\": {\\"city\\": $(decode_cbor.town), \\"tail\\": \\"\\u0024(decode_cbor.town) and more\\", \\"lead\\": \\"at \\u0024(decode_cbor.town)\\"}}"]
  decode_log -> decode_cbor -> fetch
'''
`
    const summary = summariseJob(jobOf(text))
    expect(summary.requestParams).toEqual({ city: 'town' })
    expect(summary.literals).toEqual({
      tail: '$(decode_cbor.town) and more',
      lead: 'at $(decode_cbor.town)',
    })
  })
})
