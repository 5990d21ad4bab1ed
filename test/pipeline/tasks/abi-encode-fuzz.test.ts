import fc from 'fast-check'
import { AbiCoder, FunctionFragment, hexlify, Interface } from 'ethers'
import { describe, expect, it } from 'vitest'
import { wordKinds } from '../../../src/pipeline/tasks/abi-words.ts'
import { runTask } from '../support/task.ts'

// ethabiencode encodes flat lists of static words and dynamic bytes itself (abi-words.ts); the
// output must be byte for byte what ethers makes of the same arguments, and anything else must
// still go through ethers.

/** One argument: its ABI type, the value given to the task, and the value given to ethers. */
interface Argument {
  type: string
  value: unknown
  expected: unknown
}

const sizes = (step: number, max: number): number[] =>
  Array.from({ length: max / step }, (_, index) => (index + 1) * step)

/** Upper- or lowercase for each hex digit, so the task sees mixed-case hex. */
const mixedCase = (hex: string): fc.Arbitrary<string> =>
  fc
    .array(fc.boolean(), { minLength: hex.length, maxLength: hex.length })
    .map((upper) => '0x' + [...hex].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(''))

const hexDigits = (bytes: Uint8Array): string => hexlify(bytes).slice(2)

function integerArgument(bits: number, signed: boolean): fc.Arbitrary<Argument> {
  const type = `${signed ? 'int' : 'uint'}${bits}`
  const min = signed ? -(1n << BigInt(bits - 1)) : 0n
  const max = signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n
  const number = fc.oneof(
    fc.constantFrom(min, max, 0n, signed ? -1n : 1n, signed ? min + 1n : max - 1n),
    fc.bigInt({ min, max }),
  )
  return fc
    .tuple(number, fc.constantFrom('bigint', 'decimal string'))
    .map(([n, as]) => ({ type, value: as === 'bigint' ? n : n.toString(), expected: n }))
}

const integers = fc
  .tuple(fc.constantFrom(...sizes(8, 256)), fc.boolean())
  .chain(([bits, signed]) => integerArgument(bits, signed))

const bools = fc
  .tuple(fc.boolean(), fc.boolean())
  .map(([b, asText]) => ({ type: 'bool', value: asText ? String(b) : b, expected: b }))

const addresses = fc
  .uint8Array({ minLength: 20, maxLength: 20 })
  .chain((bytes) => fc.tuple(fc.constant(bytes), mixedCase(hexDigits(bytes)), fc.boolean()))
  .map(([bytes, hex, raw]) => ({
    type: 'address',
    value: raw ? bytes : hex,
    expected: hexlify(bytes),
  }))

const fixedBytes = fc
  .integer({ min: 1, max: 32 })
  .chain((size) => fc.uint8Array({ minLength: size, maxLength: size }))
  .chain((bytes) => fc.tuple(fc.constant(bytes), mixedCase(hexDigits(bytes)), fc.boolean()))
  .map(([bytes, hex, raw]) => ({
    type: `bytes${bytes.length}`,
    value: raw ? bytes : hex,
    expected: hexlify(bytes),
  }))

/** bytesN given as text of exactly N bytes (ASCII here), as Chainlink takes it. */
const fixedBytesText = fc
  .string({ unit: 'binary-ascii', minLength: 1, maxLength: 32 })
  .filter((text) => !text.startsWith('0x'))
  .map((text) => ({
    type: `bytes${text.length}`,
    value: text,
    expected: hexlify(new TextEncoder().encode(text)),
  }))

const dynamicBytes = fc.oneof(
  fc
    .uint8Array({ maxLength: 100 })
    .chain((bytes) => fc.tuple(fc.constant(bytes), mixedCase(hexDigits(bytes)), fc.boolean()))
    .map(([bytes, hex, raw]) => ({ type: 'bytes', value: raw ? bytes : hex, expected: bytes })),
  // Text that is not 0x-hex is taken as its UTF-8 bytes.
  fc
    .string({ unit: 'grapheme', maxLength: 40 })
    .filter((text) => !/^0x(?:[0-9a-fA-F]{2})*$/.test(text))
    .map((text) => ({ type: 'bytes', value: text, expected: new TextEncoder().encode(text) })),
)

const strings = fc
  .oneof(
    fc.string({ unit: 'binary', maxLength: 80 }), // any code point, surrogate pairs included
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.constantFrom('', 'é', '€', '😀', 'Man United', '0x1234', 'a'.repeat(32), 'ü'.repeat(17)),
  )
  .map((text) => ({ type: 'string', value: text, expected: text }))

const argument: fc.Arbitrary<Argument> = fc.oneof(
  integers,
  bools,
  addresses,
  fixedBytes,
  fixedBytesText,
  dynamicBytes,
  strings,
)

/** The task's output for `abi` with arguments a0, a1, ... and what ethers makes of them. */
async function bothEncodings(
  args: readonly Argument[],
  name: string,
): Promise<{ abi: string; got: unknown; expected: string }> {
  const list = args.map(({ type }, index) => `${type} a${index}`).join(', ')
  const abi = `${name}(${list})`
  const data = Object.fromEntries(args.map(({ value }, index) => [`a${index}`, value]))
  const got = await runTask('ethabiencode', { abi, data: '$(d)' }, { vars: { d: data } })
  const types = args.map(({ type }) => type)
  const values = args.map(({ expected }) => expected)
  const expected =
    name === ''
      ? AbiCoder.defaultAbiCoder().encode(types, values)
      : new Interface([`function ${abi}`]).encodeFunctionData(name, values)
  return { abi, got, expected }
}

describe('ethabiencode of flat argument lists (abi-words)', () => {
  it('matches ethers for random argument lists, with and without a selector', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(argument, { maxLength: 8 }),
        fc.constantFrom('', 'fulfill', 'fulfillOracleRequest2'),
        async (args, name) => {
          const { abi, got, expected } = await bothEncodings(args, name)
          expect(
            wordKinds(FunctionFragment.from(`function f${abi.slice(name.length)}`).inputs),
          ).toBeDefined()
          expect(got).toBe(expected)
        },
      ),
      { numRuns: 1000 },
    )
  })

  it("matches ethers for the direct request job's two ABIs", async () => {
    const requestId = {
      type: 'bytes32',
      value: '0x' + 'Ab'.repeat(32),
      expected: '0x' + 'ab'.repeat(32),
    }
    const { got: data, expected: dataExpected } = await bothEncodings(
      [
        requestId,
        { type: 'uint256', value: '123456789012345678901', expected: 123456789012345678901n },
      ],
      '',
    )
    expect(data).toBe(dataExpected)
    const args: Argument[] = [
      requestId,
      { type: 'uint256', value: '100000000000000000', expected: 10n ** 17n },
      {
        type: 'address',
        value: '0xE7F1725e7734ce288f8367e1bb143e90bb3f0512',
        expected: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
      },
      { type: 'bytes4', value: '0x4357855e', expected: '0x4357855e' },
      { type: 'uint256', value: 1700000300n, expected: 1700000300n },
      { type: 'bytes', value: dataExpected, expected: dataExpected },
    ]
    const { got, expected } = await bothEncodings(args, 'fulfillOracleRequest2')
    expect(got).toBe(expected)
    expect(got).toMatch(/^0x[0-9a-f]+$/)
  })

  it('leaves a string with a lone surrogate to ethers (an error, or its own bytes)', async () => {
    const abi = '(string s, uint8 n)'
    const run = (s: string): Promise<unknown> =>
      runTask('ethabiencode', { abi, data: '$(d)' }, { vars: { d: { s, n: 1 } } })
    await expect(run('a\ud800b')).rejects.toThrow(
      'cannot encode anonymous__(string,uint8): invalid surrogate pair',
    )
    // A lone low surrogate: ethers writes it as three bytes where Node would write U+FFFD.
    expect(await run('a\udc00b')).toBe(
      AbiCoder.defaultAbiCoder().encode(
        ['bytes', 'uint8'],
        [Uint8Array.from([0x61, 0xed, 0xb0, 0x80, 0x62]), 1],
      ),
    )
  })
})

describe('ethabiencode of arrays and tuples (ethers)', () => {
  it('encodes them as ethers does', async () => {
    const abi = 'report(uint256[] values, (address who, bytes32 id) entry, string[2] names, int8 n)'
    const fragment = FunctionFragment.from(`function ${abi}`)
    expect(wordKinds(fragment.inputs)).toBeUndefined()
    const who = '0xE7F1725e7734ce288f8367e1bb143e90bb3f0512'
    const id = '0x' + '12'.repeat(32)
    const data = { values: [1, '2', 3n], entry: { who, id }, names: ['a', 'ü€'], n: -5 }
    const got = await runTask('ethabiencode', { abi, data: '$(d)' }, { vars: { d: data } })
    expect(got).toBe(
      new Interface([fragment]).encodeFunctionData('report', [
        [1n, 2n, 3n],
        [who.toLowerCase(), id],
        ['a', 'ü€'],
        -5n,
      ]),
    )
    const tupleOnly = await runTask(
      'ethabiencode',
      { abi: '((uint8 a, bytes b) t)', data: '$(d)' },
      { vars: { d: { t: { a: 7, b: '0x0102' } } } },
    )
    expect(tupleOnly).toBe(AbiCoder.defaultAbiCoder().encode(['(uint8,bytes)'], [[7n, '0x0102']]))
  })

  it('keeps its error messages for bad values', async () => {
    const run = (abi: string, data: unknown): Promise<unknown> =>
      runTask('ethabiencode', { abi, data: '$(d)' }, { vars: { d: data } })
    await expect(run('(address a)', { a: '0x1234' })).rejects.toThrow(
      'data.a: expected an address, got "0x1234"',
    )
    await expect(run('(address[] a)', { a: ['0xzz'] })).rejects.toThrow(
      'data.a[0]: expected an address, got "0xzz"',
    )
    await expect(run('(int8 a, bytes b)', { a: -129, b: '0x' })).rejects.toThrow(
      'data.a: -129 is out of range for int8',
    )
    await expect(run('(bool a)', { a: 'yes' })).rejects.toThrow(
      'data.a: expected a boolean, got "yes"',
    )
    await expect(run('(bytes2 a)', { a: '0x010203' })).rejects.toThrow(
      'data.a: expected 2 bytes, got 3',
    )
    await expect(run('(string a)', { a: {} })).rejects.toThrow(
      'data.a: expected a string, got an object',
    )
  })
})
