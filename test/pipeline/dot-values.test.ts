import { describe, expect, it } from 'vitest'
import { loadJobSpec, runJob, type Job } from '../../src/pipeline/index.ts'
import { quoteBareNumerals } from '../../src/pipeline/job-spec/dot.ts'
import { sendJson, startTestServer } from './support/http-server.ts'

/** A directrequest spec around `source` (the fields are the docs' "spec format" example's). */
function spec(source: string): string {
  return [
    'type = "directrequest"',
    'schemaVersion = 1',
    'name = "example eth request event spec"',
    'contractAddress = "0x613a38AC1659769640aaE063C651F48E0250454C"',
    'observationSource = """',
    source,
    '"""',
  ].join('\n')
}

function load(source: string): { job?: Job; problems: string[] } {
  const { job, problems } = loadJobSpec(spec(source), 'values.toml')
  return { job, problems: problems.map((problem) => `${problem.line}: ${problem.message}`) }
}

describe('DOT attribute values are read as Chainlink reads them', () => {
  it('bare numbers keep their digits as written', () => {
    const { job, problems } = load(
      'a [type="divide" input="7" divisor=1.50 precision=-2 index=1]\nb [type="multiply" input="1" times=.5]\nc [type="multiply" input="1" times=1000000000000000000000000]',
    )
    expect(problems).toEqual([])
    const attributes = Object.fromEntries(job!.tasks.map((task) => [task.id, task.attributes]))
    expect(attributes.a).toMatchObject({ divisor: '1.50', precision: '-2', index: '1' })
    expect(attributes.b!.times).toBe('.5')
    expect(attributes.c!.times).toBe('1000000000000000000000000')
    expect(job!.tasks.find((task) => task.id === 'a')!.index).toBe(1)
  })

  it('quoted strings, <...> JSON and bare words; comments and quoted "=1" are left alone', () => {
    const source =
      'a [type=memo value=<{"n": 1, "t": "x=2"}> note="k=3"] // x=4\n/* y=5 */ b [type=fail msg=boom]'
    expect(quoteBareNumerals(source)).toBe(source)
    expect(quoteBareNumerals('a [x=5, y = -6.5]')).toBe('a [x="5", y = "-6.5"]')
    const { job } = load('a [type=memo value=<{"n": 1}>]\nb [type=fail msg=boom]')
    expect(job!.tasks.map((task) => task.attributes)).toEqual([
      { type: 'memo', value: '{"n": 1}' },
      { type: 'fail', msg: 'boom' },
    ])
  })

  it("the docs' spec format example (times=100) validates and runs: the value is 100 times the answer", async () => {
    const server = await startTestServer((_request, response) =>
      sendJson(response, 200, { USD: 3012.41 }),
    )
    try {
      const { job, problems } = load(
        `    ds          [type="http" method=GET url="${server.url}"]\n    ds_parse    [type="jsonparse" path="USD"]\n    ds_multiply [type="multiply" times=100]\n\n    ds -> ds_parse -> ds_multiply`,
      )
      expect(problems).toEqual([])
      const result = await runJob(job!)
      expect(result.errors).toEqual([])
      expect(String(result.outputs[0])).toBe('301241')
    } finally {
      await server.close()
    }
  })

  it('mean with precision=2 and allowedFaults=1 written bare, as the task reference writes them', async () => {
    const { job, problems } = load(
      'a [type=memo value="2"]\nb [type=memo value="5"]\nc [type=fail msg="down"]\nm [type="mean" values=<[ $(a), $(b), $(c) ]> precision=2 allowedFaults=1]',
    )
    expect(problems).toEqual([])
    const result = await runJob(job!)
    expect(result.errors).toEqual([])
    expect(String(result.outputs[0])).toBe('3.5')
  })

  it('validation sees what the run would refuse: each literal is checked with its line', () => {
    const { problems } = load(
      [
        'a [type=multiply input="1" times=abc]',
        'b [type=divide input="1" divisor=0 precision=1.5]',
        'c [type=median values="[1]" allowedFaults=-1]',
        'd [type=jsonparse data="{}" path="x" lax=maybe]',
        'e [type=ethtx to="0x123" data="0x1"]',
        'f [type=conditional data="true"]',
        'g [type=median values="[1]" allowedFaults="$(a)"]',
        'h [type=bridge name=x async=true cacheTTL="1m"]',
        'i [type=bridge name="my bridge"]',
        'j [type=http method=FETCH url="ftp://example.com"]',
        'k [type=ethabiencode abi="(bytes32 requestId, uint256 value)" data=<{"requestId": $(a)}>]',
      ].join('\n'),
    )
    expect(problems).toEqual([
      '6: times must be a number, got "abc"',
      '7: divisor must not be zero',
      '7: precision must be a whole number (int32), got "1.5"',
      '8: allowedFaults must be a whole number from 0, got "-1"',
      '9: lax must be true or false, got "maybe"',
      '10: to must be a 0x address of 20 bytes, got "0x123"',
      '10: data must be 0x-hex of whole bytes, got "0x1"',
      expect.stringContaining(
        '11: data must be a $(variable): Chainlink ignores a value written here',
      ),
      expect.stringContaining('12: allowedFaults must be a whole number written in the spec'),
      expect.stringContaining('13: async: asynchronous bridges are not supported'),
      expect.stringContaining('13: cacheTTL: is not supported: feedrunner keeps no cache'),
      '14: name: must be a bridge name such as "datafeed" (letters, digits, _ and -), got "my bridge"',
      '15: method: FETCH is not supported (GET, POST, PUT, PATCH, DELETE, HEAD)',
      '15: url: must be an http or https URL, got "ftp://example.com"',
      '16: data: has no value for argument value',
    ])
  })

  it('an attribute Chainlink would ignore is refused by name (core test data writes value= on multiply)', () => {
    const { problems } = load(
      'ds1 [type=http method=GET url="http://example.com"]\nm [type=multiply value="$(ds1)" times=100]\nds1 -> m',
    )
    expect(problems).toEqual([
      expect.stringMatching(
        /^7: unknown attribute value for multiply \(known: input, times\): feedrunner refuses what it does not implement/,
      ),
    ])
  })

  it('an attribute named __proto__ is refused as unknown, not dropped without a word', () => {
    expect(load('a [type=any __proto__="x"]').problems).toEqual([
      expect.stringMatching(/^6: unknown attribute __proto__ for any \(known: none\)/),
    ])
  })

  it('task types and booleans are read as a node reads them: JSONParse, failEarly=1', () => {
    const { job, problems } = load('a [type=JSONParse data="{}" path="" lax=T failEarly=1]')
    expect(problems).toEqual([])
    expect(job!.tasks[0]).toMatchObject({ type: 'jsonparse', attributes: { failEarly: 'true' } })
  })
})
