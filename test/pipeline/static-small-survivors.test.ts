import { describe, expect, it } from 'vitest'
import { loadJobSpec, runJob, type RunResult } from '../../src/pipeline/index.ts'

// What the definitions of the small task types (sum, mean, median, mode, memo, lookup, length,
// hexencode, hexdecode, divide, multiply) say to the loader and the executor, seen through a spec:
// the attributes each takes, the JSON and literals it checks at load time, the attribute it needs,
// and the failed inputs an aggregate counts as faults instead of failing. Task-level tests call
// `run` directly and never see these fields.

/** A cron spec around `dot`, the DOT text of its observationSource. */
function spec(dot: string): string {
  return `type = "cron"
schemaVersion = 1
name = "small tasks"
schedule = "@every 1m"
observationSource = """
${dot}
"""
`
}

/** The loader's problems with `dot`, as `task: message`. */
function problemsOf(dot: string): string[] {
  const { job, problems } = loadJobSpec(spec(dot), 'jobs/small.toml')
  expect(job === undefined).toBe(problems.length > 0)
  return problems.map((problem) => `${problem.task ?? ''}: ${problem.message}`)
}

/** Loads `dot` (which must load) and runs it; each task's value or error by its id. */
async function run(dot: string): Promise<{ result: RunResult; values: Record<string, unknown> }> {
  const { job, problems } = loadJobSpec(spec(dot), 'jobs/small.toml')
  expect(problems).toEqual([])
  const result = await runJob(job!)
  const values = Object.fromEntries(
    result.tasks.map((task) => [task.id, task.ok ? task.value : `error: ${task.error ?? ''}`]),
  )
  return { result, values }
}

const text = (value: unknown): string => String(value)

describe('the attributes a spec author writes on the small task types', () => {
  it('takes values on sum and mode, input on hexdecode, hexencode and length, key on lookup', async () => {
    const { result, values } = await run(`
  total [type="sum" values="[1, 2, 3]"]
  common [type="mode" values="[1, 2, 2]"]
  decoded [type="hexdecode" input="0x0102"]
  encoded [type="hexencode" input="hi"]
  size [type="length" input="abc"]
  map [type="memo" value=<{"a": 7}>]
  found [type="lookup" key="a"]
  map -> found
`)
    expect(result.errors).toEqual([])
    expect(text(values.total)).toBe('6')
    expect(values.common).toEqual({ results: [2], occurrences: 2 })
    expect(values.decoded).toEqual(new Uint8Array([1, 2]))
    expect(values.encoded).toBe('0x6869')
    expect(text(values.size)).toBe('3')
    expect(text(values.found)).toBe('7')
  })
})

describe('JSON attributes checked when the spec loads', () => {
  it('refuses values that are not JSON on sum, mean, median and mode, naming the attribute', () => {
    for (const type of ['sum', 'mean', 'median', 'mode']) {
      expect(problemsOf(`  a [type="${type}" values="[1, 2"]`)).toEqual([
        expect.stringMatching(/^a: values is not valid JSON: /),
      ])
    }
  })

  it("refuses a memo's value that is not JSON, naming it", () => {
    expect(problemsOf('  a [type="memo" value="[1, 2"]')).toEqual([
      expect.stringMatching(/^a: value is not valid JSON: /),
    ])
  })
})

describe('literal attributes checked when the spec loads', () => {
  it("refuses a mean's precision that is not a whole number", () => {
    expect(problemsOf('  a [type="mean" values="[1, 2]" precision="x"]')).toEqual([
      'a: precision must be a whole number (int32), got "x"',
    ])
  })

  it('refuses an input of divide or multiply that is not a number', () => {
    expect(problemsOf('  a [type="divide" input="x" divisor=2]')).toEqual([
      'a: input must be a number, got "x"',
    ])
    expect(problemsOf('  a [type="multiply" input="x" times=2]')).toEqual([
      'a: input must be a number, got "x"',
    ])
  })

  it('refuses a divide without a divisor, instead of failing every run', () => {
    expect(problemsOf('  a [type="divide" input=1]')).toEqual([
      'a: divide needs the attribute divisor',
    ])
  })

  it('refuses a hexdecode input that is not whole hex bytes', () => {
    expect(problemsOf('  a [type="hexdecode" input="0x123"]')).toEqual([
      'a: input: must be 0x-hex of whole bytes, got "0x123"',
    ])
  })
})

describe('an aggregate counts a failed input as a fault', () => {
  // `bad` fails when it runs (a memo's 1 is no map to look a key up in); `good` gives 4.
  const sources = `
  one [type="memo" value="1"]
  bad [type="lookup" key="a"]
  good [type="memo" value="4"]
  one -> bad`

  it('gives sum, mean, median and mode of the values left, within allowedFaults', async () => {
    for (const type of ['sum', 'mean', 'median']) {
      const { result, values } = await run(`${sources}
  agg [type="${type}" allowedFaults=1]
  bad -> agg
  good -> agg
`)
      expect(values.bad).toBe('error: unexpected input type: 1')
      expect(result.errors).toEqual([])
      expect(text(values.agg)).toBe('4')
    }
    const { values } = await run(`${sources}
  agg [type="mode" allowedFaults=1]
  bad -> agg
  good -> agg
`)
    expect(text((values.agg as { results: unknown[] }).results[0])).toBe('4')
  })
})

describe('a length of text', () => {
  it('counts the UTF-8 bytes of text that only ends in 0x-hex, not decoded hex', async () => {
    const { values } = await run('  size [type="length" input="id 0xff"]')
    expect(text(values.size)).toBe('7')
  })
})

describe('a hexdecode input written in the spec', () => {
  // The load-time check follows the run's rules, which are Chainlink's (HasPrefix takes 0x or 0X):
  // a spec is refused only for what would fail every run.
  it('takes a 0X prefix, as the run and a Chainlink node do', async () => {
    const { result, values } = await run('  decoded [type="hexdecode" input="0XAB"]')
    expect(result.errors).toEqual([])
    expect(values.decoded).toEqual(new Uint8Array([0xab]))
  })

  it('leaves a variable, or a blank input that reads the task input, to the run', async () => {
    const { result, values } = await run(`
  hex [type="memo" value=<"0x01">]
  named [type="hexdecode" input="$(hex)"]
  blank [type="hexdecode" input=""]
  hex -> blank
`)
    expect(result.errors).toEqual([])
    expect(values.named).toEqual(new Uint8Array([1]))
    expect(values.blank).toEqual(new Uint8Array([1]))
  })

  it('refuses text before the 0x, which every run would refuse', () => {
    expect(problemsOf('  a [type="hexdecode" input=" 0xab"]')).toEqual([
      'a: input: must be 0x-hex of whole bytes, got " 0xab"',
    ])
  })
})
