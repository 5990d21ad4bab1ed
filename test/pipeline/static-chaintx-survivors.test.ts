import { describe, expect, it } from 'vitest'
import { loadJobSpec, RecordingChainAccess, runJob } from '../../src/pipeline/index.ts'

// The fields the chain tasks declare for the loader (ethtx, ethabiencode, ethabiencode2,
// ethabidecode, ethabidecodelog): which attributes a spec may write, which must be JSON, which must
// be an address, a number, a boolean or a variable, and which are required. They act only when a
// spec is loaded, so each is pinned by a spec taken or refused in the words its author reads.

const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const KEY = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'

/** A directrequest spec on chain 1337 whose DOT text is `dot` (a literal block: `\"` reaches DOT). */
function directRequest(dot: string): string {
  return `type = "directrequest"
schemaVersion = 1
name = "chain tasks"
contractAddress = "${OPERATOR}"
evmChainID = "1337"
observationSource = '''
  ${dot}
'''
`
}

/** A cron spec whose DOT text is `dot`. */
function cron(dot: string): string {
  return `type = "cron"
schemaVersion = 1
name = "abi tasks"
schedule = "@every 1m"
observationSource = '''
  ${dot}
'''
`
}

/** What loading `text` tells its author, one message a problem. */
function problemsOf(text: string): string[] {
  const { job, problems } = loadJobSpec(text, 'chain.toml')
  expect(job === undefined).toBe(problems.length > 0)
  return problems.map((problem) => problem.message)
}

const ethtx = (attributes: string) =>
  directRequest(`submit [type="ethtx" to="${OPERATOR}" ${attributes}]`)

describe('ethtx attributes as a spec author writes them', () => {
  it('takes a spec writing every ethtx attribute, and the run hands each to the chain', async () => {
    const { job, problems } = loadJobSpec(
      ethtx(
        [
          `from="[\\"${KEY}\\"]"`,
          'data="0x1234"',
          'gasLimit="100000"',
          'minConfirmations="2"',
          'failOnRevert="true"',
          'evmChainID="1337"',
          'txMeta="{\\"jobID\\": 7}"',
          'transmitChecker="{\\"CheckerType\\": \\"simulate\\"}"',
        ].join(' '),
      ),
      'chain.toml',
    )
    expect(problems).toEqual([])
    const chain = new RecordingChainAccess()
    const result = await runJob(job!, { chain, senders: [KEY] })
    expect(result.errors).toEqual([])
    expect(chain.transactions).toEqual([
      expect.objectContaining({
        to: OPERATOR,
        data: '0x1234',
        gasLimit: 100000n,
        minConfirmations: 2,
        failOnRevert: true,
        simulate: true,
      }),
    ])
    expect(result.outputs).toEqual([{ status: 'recorded', txMeta: { jobID: 7 } }])
  })

  it('reads evmChainID: a task naming another chain than the job fails its run', async () => {
    const { job, problems } = loadJobSpec(ethtx('data="0x1234" evmChainID="1"'), 'chain.toml')
    expect(problems).toEqual([])
    const result = await runJob(job!, { chain: new RecordingChainAccess() })
    expect(result.errors).toEqual([
      expect.stringMatching(/evmChainID 1: this job runs on chain 1337/),
    ])
  })

  // A node reads `from` as JSON with variables (JSONWithVarExprs), as the run does: a list naming a
  // key by variable is known at run time, and only its written items can be checked at load.
  it('takes a from list naming a key by variable, checks its written items, and the run sends', async () => {
    const keyed = (from: string) =>
      directRequest(`key [type="memo" value="\\"${KEY}\\""]
  submit [type="ethtx" to="${OPERATOR}" data="0x1234" from="${from}"]
  key -> submit`)
    const { job, problems } = loadJobSpec(keyed(`[$(key), \\"${KEY}\\"]`), 'chain.toml')
    expect(problems).toEqual([])
    const chain = new RecordingChainAccess()
    const result = await runJob(job!, { chain, senders: [KEY] })
    expect(result.errors).toEqual([])
    expect(chain.transactions).toHaveLength(1)
    expect(problemsOf(keyed('[$(key), \\"0x12\\"]'))).toEqual([
      'from must be a JSON list of 0x addresses such as ["0x9fE4...a6e0"], got "[$(key), \\"0x12\\"]"',
    ])
    // Chainlink puts a variable's value in place of the whole `$(...)`: inside quotes it is no JSON.
    expect(problemsOf(keyed('[\\"$(key)\\"]'))).toEqual([
      'from must be a JSON list of 0x addresses such as ["0x9fE4...a6e0"], got "[\\"$(key)\\"]"',
    ])
  })

  it('refuses literal values of the wrong kind, naming each attribute', () => {
    expect(
      problemsOf(
        ethtx(
          'data="0xzz" gasLimit="-1" minConfirmations="x" failOnRevert="maybe" evmChainID="one"',
        ),
      ),
    ).toEqual([
      'data must be 0x-hex of whole bytes, got "0xzz"',
      'gasLimit must be a whole number from 0, got "-1"',
      'minConfirmations must be a whole number from 0, got "x"',
      'failOnRevert must be true or false, got "maybe"',
      'evmChainID must be a whole number from 0, got "one"',
    ])
  })

  it('refuses txMeta, transmitChecker or from that is not JSON, saying where the JSON breaks', () => {
    expect(problemsOf(ethtx('txMeta="{bad"'))).toEqual([
      expect.stringMatching(/^txMeta is not valid JSON: .*position 1/),
    ])
    expect(problemsOf(ethtx('transmitChecker="{bad"'))).toEqual([
      expect.stringMatching(/^transmitChecker is not valid JSON: .*position 1/),
    ])
    // The list of keys is checked as one too, but only the JSON's own error says where it breaks.
    expect(problemsOf(ethtx('from="[0x12"'))).toEqual([
      expect.stringMatching(/^from is not valid JSON: .*position 2/),
      'from must be a JSON list of 0x addresses such as ["0x9fE4...a6e0"], got "[0x12"',
    ])
  })
})

const ID = `0x${'ab'.repeat(32)}`

describe('the ABI tasks as a spec author writes them', () => {
  it('takes ethabiencode2 and ethabidecode with abi and data written, and the run decodes what it encoded', async () => {
    const { job, problems } = loadJobSpec(
      cron(`encode [type="ethabiencode2"
      abi="{\\"inputs\\": [{\\"name\\": \\"price\\", \\"type\\": \\"uint256\\"}, {\\"name\\": \\"id\\", \\"type\\": \\"bytes32\\"}]}"
      data="{\\"price\\": 42, \\"id\\": \\"${ID}\\"}"]
    decode [type="ethabidecode" abi="uint256 price, bytes32 id" data="$(encode)"]
    encode -> decode`),
      'abi.toml',
    )
    expect(problems).toEqual([])
    const result = await runJob(job!)
    expect(result.errors).toEqual([])
    expect(result.outputs).toEqual([{ price: 42n, id: ID }])
  })

  it('refuses a task without its abi, saying the attribute is needed', () => {
    const needs = (type: string) => `${type} needs the attribute abi`
    // An empty argument list parses, so for ethabidecode the requirement is the only refusal (a
    // node's ethabidecode fails without its abi too).
    expect(
      problemsOf(
        cron(
          'decode [type="ethabidecode" data="$(input)"] input [type="memo" value="1"] input -> decode',
        ),
      ),
    ).toEqual([needs('ethabidecode')])
    for (const [type, extra] of [
      ['ethabiencode', 'data="{}"'],
      ['ethabiencode2', 'data="{}"'],
      ['ethabidecodelog', 'topics="[]"'],
    ] as const)
      expect(problemsOf(cron(`task [type="${type}" ${extra}]`)), type).toEqual([
        expect.stringMatching(/^abi: /),
        needs(type),
      ])
  })

  it('refuses ethabiencode and ethabiencode2 data that is not JSON, saying where the JSON breaks', () => {
    expect(problemsOf(cron('encode [type="ethabiencode" abi="(uint256 a)" data="{bad"]'))).toEqual([
      expect.stringMatching(/^data is not valid JSON: .*position 1/),
    ])
    expect(
      problemsOf(
        cron(
          'encode [type="ethabiencode2" abi="{\\"inputs\\": [{\\"name\\": \\"a\\", \\"type\\": \\"uint256\\"}]}" data="{bad"]',
        ),
      ),
    ).toEqual([expect.stringMatching(/^data is not valid JSON: .*position 1/)])
  })

  it("refuses ethabidecode data written as a literal: a node reads the task's input instead", () => {
    expect(problemsOf(cron('decode [type="ethabidecode" abi="uint256 a" data="0x00"]'))).toEqual([
      `data must be a $(variable): Chainlink ignores a value written here and reads the task's input instead, got "0x00"`,
    ])
  })
})
