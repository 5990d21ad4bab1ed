import { describe, expect, it } from 'vitest'
import {
  duplicateJobIdProblems,
  formatProblem,
  loadJobSpec,
  type SpecProblem,
} from '../../src/pipeline/index.ts'

// A valid spec; each case below breaks it in one place and names the message a person then reads.
// observationSource starts on TOML line 9, so observationSource line n is TOML line 8 + n.
const VALID = `type = "directrequest"
schemaVersion = 1
name = "table"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
maxTaskDuration = "30s"
observationSource = """
    decode_log  [type="ethabidecodelog" abi="OracleRequest(bytes32 indexed specId, address requester, bytes32 requestId, uint256 payment, address callbackAddr, bytes4 callbackFunctionId, uint256 cancelExpiration, uint256 dataVersion, bytes data)" data="$(jobRun.logData)" topics="$(jobRun.logTopics)"]
    decode_cbor [type="cborparse" data="$(decode_log.data)"]
    fetch       [type="bridge" name="datafeed" requestData="{\\\\"data\\\\": {\\\\"q\\\\": $(decode_cbor.q)}}"]
    parse       [type="jsonparse" path="result" data="$(fetch)"]
    encode_data [type="ethabiencode" abi="(bytes32 requestId, uint256 value)" data="{\\\\"requestId\\\\": $(decode_log.requestId), \\\\"value\\\\": $(parse)}"]
    submit      [type="ethtx" to="0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512" data="$(encode_data)"]
    decode_log -> decode_cbor -> fetch -> parse -> encode_data -> submit
"""
`

/** The valid spec with `from` replaced by `to` (which must occur exactly once). */
function broken(from: string, to: string): string {
  expect(VALID.split(from), `"${from}" occurs once in the valid spec`).toHaveLength(2)
  return VALID.replace(from, to)
}

interface Case {
  name: string
  text: string
  /** Where the problem is reported. */
  at: Partial<Pick<SpecProblem, 'line' | 'sourceLine' | 'task' | 'field'>>
  message: string
}

const ADDRESS = 'contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"\n'
const CASES: Case[] = [
  // TOML fields: missing, mistyped, malformed.
  {
    name: 'contractAddress missing',
    text: broken(ADDRESS, ''),
    at: { field: 'contractAddress', line: undefined },
    message:
      'contractAddress is required in a directrequest spec: the Operator contract whose OracleRequest logs this job answers',
  },
  {
    name: 'contractAddress with a bad checksum',
    text: broken(
      '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"\nevm',
      '0xe7f1725E7734Ce288F8367e1Bb143E90bb3F0512"\nevm',
    ),
    at: { field: 'contractAddress', line: 5 },
    message:
      'contractAddress must be a 0x-prefixed 20-byte address with a valid EIP-55 checksum, got "0xe7f1725E7734Ce288F8367e1Bb143E90bb3F0512"',
  },
  {
    name: 'type missing',
    text: broken('type = "directrequest"\n', ''),
    at: { field: 'type' },
    message: 'type is required: the job type; feedrunner runs directrequest (',
  },
  {
    name: 'type of another job kind',
    text: broken('type = "directrequest"', 'type = "keeper"'),
    at: { field: 'type', line: 1 },
    message: 'type "keeper" is not a job type feedrunner runs: feedrunner runs directrequest (',
  },
  {
    name: 'schemaVersion 2',
    text: broken('schemaVersion = 1', 'schemaVersion = 2'),
    at: { field: 'schemaVersion', line: 2 },
    message: 'schemaVersion must be 1, got 2',
  },
  {
    name: 'name missing',
    text: broken('name = "table"\n', ''),
    at: { field: 'name' },
    message:
      'name is required in a directrequest spec: the job name shown in logs, metrics and run records',
  },
  {
    name: 'name empty',
    text: broken('name = "table"', 'name = "  "'),
    at: { field: 'name', line: 3 },
    message: 'name must be a non-empty string, got "  "',
  },
  {
    name: 'externalJobID not a UUID',
    text: broken('"0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"', '"job-1"'),
    at: { field: 'externalJobID', line: 4 },
    message:
      'externalJobID must be a UUID such as "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46", got "job-1"',
  },
  {
    name: 'evmChainID a network name',
    text: broken('evmChainID = "31337"', 'evmChainID = "sepolia"'),
    at: { field: 'evmChainID', line: 6 },
    message:
      'evmChainID must be a chain id, a positive integer such as 1 or "11155111", got "sepolia"',
  },
  {
    name: 'evmChainID zero',
    text: broken('evmChainID = "31337"', 'evmChainID = 0'),
    at: { field: 'evmChainID', line: 6 },
    message: 'evmChainID must be a chain id, a positive integer such as 1 or "11155111", got 0',
  },
  {
    name: 'minIncomingConfirmations as a word',
    text: broken(
      'maxTaskDuration = "30s"',
      'maxTaskDuration = "30s"\nminIncomingConfirmations = "three"',
    ),
    at: { field: 'minIncomingConfirmations', line: 8 },
    message:
      'minIncomingConfirmations must be a whole number of blocks from 0 to 1000, got "three"',
  },
  {
    name: 'minContractPaymentLinkJuels in LINK',
    text: broken(
      'maxTaskDuration = "30s"',
      'maxTaskDuration = "30s"\nminContractPaymentLinkJuels = "0.1"',
    ),
    at: { field: 'minContractPaymentLinkJuels', line: 8 },
    message:
      'minContractPaymentLinkJuels must be a non-negative integer of LINK juels, such as "100000000000000000" (0.1 LINK), got "0.1"',
  },
  {
    name: 'requesters not a list',
    text: broken(
      'maxTaskDuration = "30s"',
      'maxTaskDuration = "30s"\nrequesters = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"',
    ),
    at: { field: 'requesters', line: 8 },
    message:
      'requesters must be a list of addresses, such as ["0x9fE4...a6e0"], got "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"',
  },
  {
    name: 'requesters with a short address',
    text: broken(
      'maxTaskDuration = "30s"',
      'maxTaskDuration = "30s"\nrequesters = ["0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0", "0x123"]',
    ),
    at: { field: 'requesters', line: 8 },
    message:
      'requesters[1] must be a 0x-prefixed 20-byte address with a valid EIP-55 checksum, got "0x123"',
  },
  {
    name: 'maxTaskDuration in words',
    text: broken('maxTaskDuration = "30s"', 'maxTaskDuration = "forever"'),
    at: { field: 'maxTaskDuration', line: 7 },
    message:
      'maxTaskDuration must be a duration such as "30s", "1m" or "0s" (no limit), got "forever"',
  },
  {
    name: 'maxTaskDuration as a number',
    text: broken('maxTaskDuration = "30s"', 'maxTaskDuration = 30'),
    at: { field: 'maxTaskDuration', line: 7 },
    message: 'maxTaskDuration must be a duration such as "30s", "1m" or "0s" (no limit), got 30',
  },
  {
    name: 'gasLimit negative',
    text: broken('maxTaskDuration = "30s"', 'maxTaskDuration = "30s"\ngasLimit = -5'),
    at: { field: 'gasLimit', line: 8 },
    message: 'gasLimit must be a positive whole number of gas, such as 500000, got -5',
  },
  {
    name: 'a field name in the wrong case',
    text: broken('externalJobID =', 'externalJobId ='),
    at: { field: 'externalJobId', line: 4 },
    message: 'unknown field externalJobId: did you mean externalJobID? (names are case-sensitive)',
  },
  {
    name: 'an unknown field',
    text: broken('maxTaskDuration = "30s"', 'maxTaskDuration = "30s"\nschedule = "@every 1m"'),
    at: { field: 'schedule', line: 8 },
    message: 'unknown field schedule: a directrequest spec takes type, schemaVersion, name,',
  },
  {
    name: 'observationSource missing',
    text: VALID.slice(0, VALID.indexOf('observationSource')),
    at: { field: 'observationSource' },
    message:
      'observationSource is required in a directrequest spec: the pipeline, as DOT tasks and edges',
  },
  {
    name: 'TOML syntax error',
    text: broken('name = "table"', 'name = table'),
    at: { line: 3 },
    message: 'not valid TOML',
  },
  // The pipeline: DOT, tasks, references, ABIs, JSON, durations.
  {
    name: 'DOT syntax error',
    text: broken('path="result" data="$(fetch)"]', 'path="result" data="$(fetch)"'),
    at: { sourceLine: 5, line: 13 },
    message: 'observationSource is not valid DOT',
  },
  {
    name: 'unknown task type',
    text: broken('[type="bridge"', '[type="brige"'),
    at: { task: 'fetch', line: 11, sourceLine: 3 },
    message: 'unknown task type "brige" (known: ',
  },
  {
    name: 'a task without a type',
    text: broken('parse       [type="jsonparse" path', 'parse       [path'),
    at: { task: 'parse', line: 12, sourceLine: 4 },
    message: 'has no type attribute: every task needs one, such as type="http" or type="jsonparse"',
  },
  {
    name: 'an edge to a task never declared',
    text: broken('encode_data -> submit', 'encode_data -> submit -> done'),
    at: { task: 'done', line: 15, sourceLine: 7 },
    message:
      'is named in an edge but never declared: declare it (done [type="..."]) or remove the edge',
  },
  {
    name: 'a cycle',
    text: broken('-> encode_data -> submit', '-> encode_data -> submit\n    submit -> parse'),
    at: { task: 'parse', line: 12, sourceLine: 4 },
    message: 'tasks form a cycle: parse -> encode_data -> submit -> parse',
  },
  {
    name: 'an edge from a task to itself',
    text: broken('-> encode_data -> submit', '-> encode_data -> submit\n    parse -> parse'),
    at: { task: 'parse', line: 16, sourceLine: 8 },
    message: 'an edge from the task to itself',
  },
  {
    name: 'a reference to an unknown task',
    text: broken('data="$(fetch)"', 'data="$(fecth)"'),
    at: { task: 'parse', line: 12, sourceLine: 4 },
    message: 'data refers to $(fecth), but there is no task fecth',
  },
  {
    name: 'a reference to an unknown run variable',
    text: broken('data="$(jobRun.logData)"', 'data="$(jobRun.logdata)"'),
    at: { task: 'decode_log', line: 9, sourceLine: 1 },
    message:
      'data refers to $(jobRun.logdata), but a directrequest run has no jobRun.logdata (it has jobRun.logData, jobRun.logTopics,',
  },
  {
    name: 'a bad ABI type in ethabiencode',
    text: broken('uint256 value)', 'uint257 value)'),
    at: { task: 'encode_data', line: 13, sourceLine: 5 },
    message:
      'it must be a function such as "fulfill(bytes32 requestId, uint256 value)" or an argument list such as "(bytes32 requestId, uint256 value)", in Solidity types',
  },
  {
    name: 'an unfinished ABI in ethabidecodelog',
    text: broken(', bytes data)"', ', bytes data"'),
    at: { task: 'decode_log', line: 9, sourceLine: 1 },
    message:
      'it must be an event such as "OracleRequest(bytes32 indexed specId, address requester, ...)"',
  },
  {
    name: 'requestData that is not JSON',
    text: broken('$(decode_cbor.q)}}"', '$(decode_cbor.q)}"'),
    at: { task: 'fetch', line: 11, sourceLine: 3 },
    message: 'requestData is not valid JSON: ',
  },
  {
    name: 'a required attribute missing',
    text: broken('[type="bridge" name="datafeed"', '[type="bridge"'),
    at: { task: 'fetch', line: 11, sourceLine: 3 },
    message: 'bridge needs the attribute name',
  },
  {
    name: 'an unknown attribute',
    text: broken('path="result"', 'path="result" colour="red"'),
    at: { task: 'parse', line: 12, sourceLine: 4 },
    message: 'unknown attribute colour for jsonparse (known: ',
  },
  {
    name: 'an attribute given twice',
    text: broken('path="result"', 'path="result" path="value"'),
    at: { task: 'parse', line: 12, sourceLine: 4 },
    message: 'attribute path is given twice',
  },
  {
    name: 'a task timeout in words',
    text: broken('name="datafeed"', 'name="datafeed" timeout="soon"'),
    at: { task: 'fetch', line: 11, sourceLine: 3 },
    message: 'timeout must be a duration such as "10s", got "soon"',
  },
  {
    name: 'negative retries',
    text: broken('name="datafeed"', 'name="datafeed" retries="-1"'),
    at: { task: 'fetch', line: 11, sourceLine: 3 },
    message: 'retries must be a non-negative integer, got "-1"',
  },
  {
    name: 'a task named like a run variable',
    text: broken('encode_data -> submit', 'encode_data -> submit\n    jobRun [type="any"]'),
    at: { task: 'jobRun', line: 16, sourceLine: 8 },
    message: 'the task id jobRun is reserved',
  },
]

describe('a broken spec: every message names the file, the line, the field or task, and what is expected', () => {
  it('has at least 25 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(25)
  })

  it.each(CASES.map((testCase) => [testCase.name, testCase] as const))('%s', (_name, testCase) => {
    const { job, problems } = loadJobSpec(testCase.text, 'jobs/table.toml')
    expect(job).toBeUndefined()
    const shown = problems.map(formatProblem).join('\n')
    const problem = problems.find((candidate) => candidate.message.includes(testCase.message))
    expect(problem, `no problem says "${testCase.message}"; the problems:\n${shown}`).toBeDefined()
    expect(problem).toMatchObject({ file: 'jobs/table.toml', ...testCase.at })
    if (problem!.field) expect(problem!.message).toContain(problem!.field)
    expect(formatProblem(problem!)).toMatch(/^jobs\/table\.toml[:( ]/)
    if (problem!.sourceLine !== undefined)
      expect(formatProblem(problem!)).toContain(
        `jobs/table.toml:${problem!.line} (observationSource line ${problem!.sourceLine}):`,
      )
    // Never the schema library's generic words.
    expect(shown).not.toMatch(
      /Invalid (input|string|type|union|option)|invalid_type|expected \w+, received/i,
    )
  })

  it('two specs with one externalJobID: the error names both files', () => {
    const first = loadJobSpec(VALID, 'jobs/first.toml').job!
    const second = loadJobSpec(
      VALID.replace('name = "table"', 'name = "copy"'),
      'jobs/second.toml',
    ).job!
    const problems = duplicateJobIdProblems([first, second])
    expect(problems).toHaveLength(1)
    expect(formatProblem(problems[0]!)).toBe(
      'jobs/second.toml: externalJobID 0eec7e1d-d0d2-476c-a1a8-72dfb6633f46 is also the id of jobs/first.toml; a request names its job by this id alone, so the two cannot both be served: give one of them another externalJobID',
    )
  })
})

describe('externalJobID and evmChainID are optional', () => {
  const withoutIds = VALID.replace(/^externalJobID = .*\n/m, '').replace(/^evmChainID = .*\n/m, '')

  it('a spec without externalJobID gets a v5 UUID of its name and file name, the same on every load', () => {
    const one = loadJobSpec(withoutIds, 'jobs/table.toml')
    expect(one.problems).toEqual([])
    expect(one.job!.externalJobIDDerived).toBe(true)
    expect(one.job!.spec.externalJobID).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    )
    // The directory does not count (another machine, another checkout); the file name and the name do.
    expect(loadJobSpec(withoutIds, '/elsewhere/table.toml').job!.spec.externalJobID).toBe(
      one.job!.spec.externalJobID,
    )
    expect(loadJobSpec(withoutIds, 'jobs/other.toml').job!.spec.externalJobID).not.toBe(
      one.job!.spec.externalJobID,
    )
    expect(
      loadJobSpec(withoutIds.replace('name = "table"', 'name = "renamed"'), 'jobs/table.toml').job!
        .spec.externalJobID,
    ).not.toBe(one.job!.spec.externalJobID)
    expect(one.job!.spec.evmChainID).toBeUndefined()
  })

  it('a given externalJobID is kept, and not marked derived', () => {
    const { job } = loadJobSpec(VALID, 'jobs/table.toml')
    expect(job!.externalJobIDDerived).toBe(false)
    expect(job!.spec.externalJobID).toBe('0eec7e1d-d0d2-476c-a1a8-72dfb6633f46')
  })
})
