import { describe, expect, it } from 'vitest'
import { Decimal } from '../../../src/reduce/index.ts'
import { toPlain } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

// Chainlink's own test cases (core/services/pipeline/task.<type>_test.go) as table tests: each case
// runs the three ways Chainlink's tests do where they apply: the value as the task's input, written
// in the attribute, and through a $(variable). Errors are final (not retryable), as Chainlink's
// RunInfo says for these tasks.

type Case = [name: string, input: unknown, expected: unknown]

async function threeWays(type: string, attribute: string, input: unknown, literal = true) {
  const viaInput = await runTask(type, {}, { inputs: [input] })
  const viaVariable = await runTask(
    type,
    { [attribute]: '$(foo.bar)' },
    { vars: { foo: { bar: input } } },
  )
  const results = [viaInput, viaVariable]
  if (literal && typeof input === 'string' && input !== '')
    results.push(await runTask(type, { [attribute]: input }))
  return results.map(toPlain)
}

async function failure(
  promise: Promise<unknown>,
): Promise<{ message: string; retryable: boolean }> {
  try {
    await promise
  } catch (error) {
    return error as { message: string; retryable: boolean }
  }
  throw new Error('expected the task to fail')
}

describe('base64decode (TestBase64DecodeTask)', () => {
  it.each<Case>([
    ['happy', 'SGVsbG8sIHBsYXlncm91bmQ=', '0x' + Buffer.from('Hello, playground').toString('hex')],
    ['empty input', '', '0x'],
  ])('%s', async (_name, input, expected) => {
    for (const result of await threeWays('base64decode', 'input', input))
      expect(result).toBe(expected)
  })
  it('wrong characters', async () => {
    const error = await failure(
      runTask('base64decode', {}, { inputs: ['S.G_VsbG8sIHBsYXlncm91bmQ='] }),
    )
    expect(error.message).toContain('failed to decode base64 string')
    expect(error.retryable).toBe(false)
  })
})

describe('base64encode (TestBase64EncodeTask)', () => {
  it.each<Case>([
    ['string input 1', 'Hello, playground', 'SGVsbG8sIHBsYXlncm91bmQ='],
    ['string input 2', '=test=test=', 'PXRlc3Q9dGVzdD0='],
    ['empty string', '', ''],
    ['bytes input 1', Uint8Array.of(0xaa, 0xbb, 0xcc, 0xdd), 'qrvM3Q=='],
    ['empty bytes', new Uint8Array(0), ''],
  ])('%s', async (_name, input, expected) => {
    for (const result of await threeWays('base64encode', 'input', input))
      expect(result).toBe(expected)
  })
  it.each([
    ['int', 234],
    ['bool', false],
    ['float', 3.14],
  ])('%s is bad input', async (_name, input) => {
    expect((await failure(runTask('base64encode', {}, { inputs: [input] }))).message).toContain(
      'expected a string',
    )
  })
  it('an int written in the spec is text (TestBase64EncodeTaskInputParamLiteral)', async () => {
    expect(await runTask('base64encode', { input: '234' })).toBe('MjM0')
  })
})

describe('hexdecode (TestHexDecodeTask)', () => {
  it.each<Case>([
    ['happy', '0x12345678', '0x12345678'],
    ['happy zero', '0x00', '0x00'],
  ])('%s', async (_name, input, expected) => {
    for (const result of await threeWays('hexdecode', 'input', input)) expect(result).toBe(expected)
  })
  it.each([
    ['missing hex prefix', '12345678', 'hex string must have prefix 0x'],
    ['empty input', '', 'hex string must have prefix 0x'],
    ['wrong alphabet', '0xwq', 'failed to decode hex string'],
  ])('%s', async (_name, input, message) => {
    expect((await failure(runTask('hexdecode', {}, { inputs: [input] }))).message).toContain(
      message,
    )
  })
})

describe('hexencode (TestHexEncodeTask)', () => {
  it.each<Case>([
    ['zero', 0, '0x0'],
    ['small int', 1, '0x1'],
    ['two-byte integer', 256, '0x100'],
    ['large int64', 999000000000, '0xe8990a4600'],
    ['bigint 1', 2n ** 100n, '0x10000000000000000000000000'],
    ['bigint 2', 3n ** 100n, '0x5a4653ca673768565b41f775d6947d55cf3813d1'],
    ['decimal type but integer value', 1.0, '0x1'],
    ['decimal.Decimal type but integer value', new Decimal('256'), '0x100'],
    ['string ascii bytes', 'xyz', '0x78797a'],
    ['string with whitespace', '1 x *', '0x312078202a'],
    ["string shouldn't convert to int", '456', '0x343536'],
    ["don't detect hex in string", '0xff', '0x30786666'],
    ['bytes remain bytes', Uint8Array.of(0xa, 0x0, 0xff, 0x1), '0x0a00ff01'],
    ['empty string', '', ''],
    ['empty byte array', new Uint8Array(0), ''],
  ])('%s', async (_name, input, expected) => {
    for (const result of await threeWays('hexencode', 'input', input)) expect(result).toBe(expected)
  })
  it.each([
    ['negative int', -1, 'negative integer'],
    ['negative bigint', -100n, 'negative integer'],
    ['input of type bool', true, 'cannot be hex-encoded'],
    ['input of type decimal', 1.44, 'decimal input'],
    ['input of decimal.Decimal type but not integer', new Decimal('3.14'), 'decimal input'],
  ])('%s', async (_name, input, message) => {
    expect((await failure(runTask('hexencode', {}, { inputs: [input] }))).message).toContain(
      message,
    )
  })
  it('an int written in the spec is text (TestHexEncodeTaskInputParamLiteral)', async () => {
    expect(await runTask('hexencode', { input: '256' })).toBe('0x323536')
  })
})

describe('length (TestLengthTask)', () => {
  it.each<Case>([
    ['normal bytes', Uint8Array.of(0xaa, 0xbb, 0xcc, 0xdd), '4'],
    ['empty bytes', new Uint8Array(0), '0'],
    ['string input gets converted to bytes', 'stevetoshi sergeymoto', '21'],
    ['empty string', '', '0'],
    ['array input', [1, 2, 3], '3'],
    ['empty array input', [], '0'],
    ['JSON array string', '[1,2,3]', '3'],
    ['empty JSON array string', '[]', '0'],
    ['multi-byte text counts bytes', 'héllo', '6'],
  ])('%s', async (_name, input, expected) => {
    for (const result of await threeWays('length', 'input', input)) expect(result).toBe(expected)
  })
})

describe('lessthan (TestLessThanTask_Happy / _Unhappy)', () => {
  it.each<[string, unknown, string, boolean]>([
    ['string, lt 100', '1.23', '100', true],
    ['string, lt negative', '1.23', '-5', false],
    ['string, lt zero', '1.23', '0', false],
    ['string, lt large value', '1.23', '1000000000000000000', true],
    ['large string, lt large value', '10000000000000000001', '1000000000000000000', false],
    ['int, true', 2, '100', true],
    ['int, false', 2, '-5', false],
    ['bigint, true', 2n, '100', true],
    ['float64, true', 1.23, '10', true],
    ['float64, false', 1.23, '-5', false],
  ])('%s', async (_name, left, right, expected) => {
    expect(await runTask('lessthan', { right }, { inputs: [left] })).toBe(expected)
    expect(await runTask('lessthan', { left: String(left), right })).toBe(expected)
    expect(
      await runTask(
        'lessthan',
        { left: '$(foo.bar)', right: '$(chain.link)' },
        { vars: { foo: { bar: left }, chain: { link: right } } },
      ),
    ).toBe(expected)
  })
  it.each<[string, Record<string, string>, unknown[], Record<string, unknown>, string]>([
    ['map as input from inputs', { right: '100' }, [{ chain: 'link' }], {}, 'left'],
    [
      'map as input from var',
      { left: '$(foo)', right: '100' },
      [],
      { foo: { chain: 'link' } },
      'left',
    ],
    ['slice as input from inputs', { right: '100' }, [['chain', 'link']], {}, 'left'],
    ['input as missing var', { left: '$(foo)', right: '100' }, [], {}, 'left'],
    ['limit as missing var', { right: '$(foo)' }, ['123'], {}, 'right'],
  ])('%s', async (_name, attributes, inputs, vars, name) => {
    const error = await failure(runTask('lessthan', attributes, { inputs, vars }))
    expect(error.message).toMatch(new RegExp(`^${name}`))
    expect(error.retryable).toBe(false)
  })
})

describe('conditional (TestConditionalTask)', () => {
  it.each([
    ['true string', 'true', true],
    ['false string', 'false', false],
    ['empty string', '', false],
    ['0 string', '0', false],
    ['1 string', '1', true],
    ['abc string', 'abc', false],
  ])('%s', async (_name, input, passes) => {
    for (const run of [
      () => runTask('conditional', {}, { inputs: [input] }),
      () => runTask('conditional', { data: '$(foo.bar)' }, { vars: { foo: { bar: input } } }),
    ]) {
      if (passes) expect(await run()).toBe(true)
      else expect((await failure(run())).retryable).toBe(false)
    }
  })
})
