import { describe, expect, it } from 'vitest'
import { DEFAULT_PIPELINE_LIMITS } from '../../../src/pipeline/limits.ts'
import { loadJobSpec } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

/**
 * Whose path is it: a path written in the spec may be JSONPath (feedrunner's extension); a path from
 * a variable, chosen by whoever made the request, is read as a Chainlink node reads it, keys split on
 * the separator, unless the spec opts in with allowJSONPath="true". Either way PATH_MAX_VALUES bounds
 * what the evaluation does.
 */
const body = JSON.stringify({ data: { result: 144, items: [1, 2, 3] }, $: { '..*': 'a key' } })

/** `$` and forty `..*` over 60 levels: the path and document. */
function deepBody(): string {
  let document: unknown = 1
  for (let level = 0; level < 60; level++) document = { a: document, b: [level, level] }
  return JSON.stringify(document)
}
const multiplying = '$' + '..*'.repeat(40)

describe("jsonparse's path from a request", () => {
  it('is a key path, as on a Chainlink node: `$` is a key like any other', async () => {
    const vars = { decode_cbor: { path: '$,..*' } }
    expect(
      await runTask('jsonparse', { path: '$(decode_cbor.path)' }, { inputs: [body], vars }),
    ).toBe('a key')
    await expect(
      runTask(
        'jsonparse',
        { path: '$(decode_cbor.path)' },
        { inputs: [body], vars: { decode_cbor: { path: '$.data.result' } } },
      ),
    ).rejects.toThrow('no value at "$.data.result"')
  })

  it("cannot multiply: the issue's path is one missing key", async () => {
    const vars = { decode_cbor: { path: multiplying } }
    await expect(
      runTask('jsonparse', { path: '$(decode_cbor.path)' }, { inputs: [deepBody()], vars }),
    ).rejects.toThrow(/: no value at "\$\.\.\*\.\.\*/)
  })

  it('is JSONPath when the spec says allowJSONPath="true", under PATH_MAX_VALUES', async () => {
    const vars = { decode_cbor: { path: '$.data.items[*]' } }
    expect(
      await runTask(
        'jsonparse',
        { path: '$(decode_cbor.path)', allowJSONPath: 'true' },
        { inputs: [body], vars },
      ),
    ).toEqual([1, 2, 3])
    const attack = runTask(
      'jsonparse',
      { path: '$(decode_cbor.path)', allowJSONPath: 'true' },
      { inputs: [deepBody()], vars: { decode_cbor: { path: multiplying } } },
    )
    await expect(attack).rejects.toThrow('more than 100000 values (PATH_MAX_VALUES)')
    await expect(attack).rejects.toMatchObject({ kind: 'bad_input' })
  })

  it("takes the budget from the run's limits", async () => {
    const limits = { ...DEFAULT_PIPELINE_LIMITS, pathMaxValues: 5 }
    await expect(
      runTask('jsonparse', { path: '$.data.items[*]' }, { inputs: [body], context: { limits } }),
    ).rejects.toThrow('more than 5 values (PATH_MAX_VALUES)')
  })
})

describe("jsonparse's path written in the spec", () => {
  it('is JSONPath when it starts with `$`, keys with allowJSONPath="false"', async () => {
    expect(await runTask('jsonparse', { path: '$.data.result' }, { inputs: [body] })).toBe(144)
    expect(
      await runTask('jsonparse', { path: '$,..*', allowJSONPath: 'false' }, { inputs: [body] }),
    ).toBe('a key')
  })

  it('is stopped by PATH_MAX_VALUES when it multiplies', async () => {
    await expect(
      runTask('jsonparse', { path: multiplying }, { inputs: [deepBody()] }),
    ).rejects.toThrow('(PATH_MAX_VALUES)')
  })
})

describe('allowJSONPath', () => {
  const spec = (value: string) => `
type = "directrequest"
schemaVersion = 1
name = "path"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"
contractAddress = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
evmChainID = "31337"
observationSource = """
  parse [type="jsonparse" data="{}" path="$(jobSpec.name)" allowJSONPath="${value}"]
"""
`
  const problems = (value: string) =>
    loadJobSpec(spec(value), 'path.toml').problems.map((problem) => problem.message)
  it('is refused at load when a variable would set it, or it is not a boolean', () => {
    expect(problems('$(jobSpec.name)').join('\n')).toContain(
      'allowJSONPath must be true or false written in the spec',
    )
    expect(problems('maybe').join('\n')).toContain('allowJSONPath must be true or false')
    expect(problems('true')).toEqual([])
  })
})
