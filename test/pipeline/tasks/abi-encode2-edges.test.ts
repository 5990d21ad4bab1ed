import { AbiCoder, id } from 'ethers'
import { describe, expect, it } from 'vitest'
import { TASK_TYPES } from '../../../src/pipeline/index.ts'
import { jsonFunctionInputs } from '../../../src/pipeline/tasks/ethabiencode2.ts'
import { runTask, failureOf as refusal } from '../support/task.ts'

/**
 * ethabiencode2's edges: the JSON ABI entry (named or not, and what the loader says of a bad one),
 * and the words of its refusals at run time.
 */
const coder = AbiCoder.defaultAbiCoder()
const check = (attributes: Record<string, string>) =>
  TASK_TYPES.get('ethabiencode2')!.check!(attributes)
const encode = (abi: object, data: unknown) =>
  runTask('ethabiencode2', { abi: JSON.stringify(abi), data: '$(data)' }, { vars: { data } })
const EXPECTED =
  '; it must be a JSON ABI entry such as {"name": "fulfill", "inputs": [{"name": "value", "type": "uint256"}]}, every input named'

describe('ethabiencode2 check: the JSON ABI entry at load', () => {
  it('accepts an entry with or without a name or inputs', () => {
    for (const abi of ['{}', '{"name": "f"}', '{"inputs": [{"name": "a", "type": "uint8"}]}'])
      expect(check({ abi }), abi).toEqual([])
  })

  it('refuses text that is not JSON, JSON that is not an object, a bad type and an unnamed input', () => {
    const message = (abi?: string) => check(abi === undefined ? {} : { abi })[0]?.message
    expect(check({ abi: '{' })).toEqual([
      {
        attribute: 'abi',
        message: `not JSON (Expected property name or '}' in JSON at position 1 (line 1 column 2))${EXPECTED}`,
      },
    ])
    expect(message()).toBe(`not JSON (Unexpected end of JSON input)${EXPECTED}`)
    expect(message('[]')).toBe(`not a JSON object${EXPECTED}`)
    expect(message('{"inputs": [{"name": "a", "type": "uint257"}]}')).toBe(
      `invalid numeric width${EXPECTED}`,
    )
    expect(
      message('{"inputs": [{"name": "a", "type": "uint8"}, {"name": "", "type": "bool"}]}'),
    ).toBe(`bad ABI specification, missing argument name (input 2)${EXPECTED}`)
  })

  it('jsonFunctionInputs: the name ("" for none) and the inputs', () => {
    const named = jsonFunctionInputs('{"name": "f", "inputs": [{"name": "a", "type": "bool"}]}')
    expect(named.name).toBe('f')
    expect(named.inputs.map((input) => `${input.type} ${input.name}`)).toEqual(['bool a'])
    const unnamed = jsonFunctionInputs('{"inputs": []}')
    expect(unnamed).toMatchObject({ name: '', inputs: [] })
  })
})

describe('ethabiencode2 run', () => {
  const inputs = [
    { name: 'a', type: 'uint8' },
    { name: 's', type: 'string' },
  ]
  const words = coder.encode(['uint8', 'string'], [5n, 'x']).slice(2)

  it('a named entry gets its selector; an unnamed or empty-named one the arguments alone', async () => {
    expect(await encode({ name: 'f', inputs }, { a: 5, s: 'x' })).toBe(
      `${id('f(uint8,string)').slice(0, 10)}${words}`,
    )
    expect(await encode({ inputs }, { a: 5, s: 'x' })).toBe(`0x${words}`)
    expect(await encode({ name: '', inputs }, { a: 5, s: 'x' })).toBe(`0x${words}`)
    expect(await encode({}, {})).toBe('0x')
    expect(await runTask('ethabiencode2', { abi: '{"name": "noArgs"}' })).toBe('0x83c962bb')
  })

  it('run without an abi (no loader checked it): refused as an ABI that is not JSON', async () => {
    expect(await refusal(runTask('ethabiencode2', {}))).toMatchObject({
      message: 'abi: not JSON (Unexpected end of JSON input)',
      kind: 'bad_input',
    })
  })

  it('refuses data that is not an object or lacks an argument, and values it cannot encode', async () => {
    const notObject = await refusal(encode({ inputs }, [5, 'x']))
    expect(notObject).toMatchObject({
      message: 'data must be a JSON object of argument values by name',
      kind: 'bad_input',
    })
    expect((await refusal(encode({ inputs }, { a: 5 }))).message).toBe(
      "data: argument 's' is missing",
    )
    expect((await refusal(encode({ inputs }, { a: 256, s: 'x' }))).message).toBe(
      'data.a: 256 is out of range for uint8',
    )
    const surrogate = await refusal(encode({ inputs }, { a: 1, s: '\ud800' }))
    expect(surrogate).toMatchObject({
      message: 'could not ABI encode values: invalid surrogate pair',
      kind: 'bad_input',
    })
  })
})
