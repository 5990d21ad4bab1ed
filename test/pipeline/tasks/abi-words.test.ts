import { AbiCoder, ParamType } from 'ethers'
import { describe, expect, it } from 'vitest'
import { encodeWords, wordKinds } from '../../../src/pipeline/tasks/abi-words.ts'

/**
 * abi-words is ethabiencode's fast path: a task gives the same bytes whether it runs or ethers does,
 * so a task's answer cannot tell whether the fast path was taken or right. These cases ask it
 * directly: which types it takes (and which it leaves to ethers), and that its words are ethers'.
 */
const kindsOf = (...types: string[]) => wordKinds(types.map((type) => ParamType.from(type)))

describe('abi-words: the types it encodes itself', () => {
  it('takes each flat type by its kind', () => {
    expect(kindsOf('uint256', 'int8', 'uint8', 'int256', 'uint40')).toEqual([
      'number',
      'number',
      'number',
      'number',
      'number',
    ])
    expect(kindsOf('bool', 'address', 'bytes', 'string')).toEqual([
      'bool',
      'address',
      'bytes',
      'string',
    ])
    expect(kindsOf('bytes1', 'bytes32', 'bytes4')).toEqual([
      'fixedBytes',
      'fixedBytes',
      'fixedBytes',
    ])
    expect(kindsOf()).toEqual([])
  })

  it('leaves arrays, tuples and anything else to ethers: undefined for the whole list', () => {
    expect(kindsOf('uint256', 'uint256[]')).toBeUndefined()
    expect(kindsOf('bytes32[2]')).toBeUndefined()
    expect(kindsOf('tuple(uint256 a, bool b)')).toBeUndefined()
    expect(kindsOf('string', 'tuple(bytes c)')).toBeUndefined()
  })

  it('checks the sizes again rather than trust the parse: none outside 8-256 bits or 1-32 bytes', () => {
    // ethers' parse refuses these names; a type that reached here some other way is still not guessed.
    const named = (type: string) =>
      ({ type, isArray: () => false, isTuple: () => false }) as unknown as ParamType
    for (const type of [
      'uint0',
      'uint7',
      'uint264',
      'int12',
      'bytes0',
      'bytes33',
      'uintx',
      'bytes',
    ])
      expect(wordKinds([named(type)]), type).toEqual(type === 'bytes' ? ['bytes'] : undefined)
    expect(wordKinds([named('uint8'), named('int256'), named('bytes32')])).toEqual([
      'number',
      'number',
      'fixedBytes',
    ])
  })
})

describe('abi-words: the words are the ones ethers writes', () => {
  const coder = AbiCoder.defaultAbiCoder()
  const cases: Array<{ types: string[]; values: unknown[]; ethers?: unknown[] }> = [
    { types: ['uint256', 'int256'], values: [2n ** 255n, -1n] },
    { types: ['int8', 'uint8'], values: [-128n, 255n] },
    { types: ['bool', 'bool'], values: [true, false] },
    {
      types: ['address'],
      values: ['0x00000000000000000000000000000000000000AB'],
    },
    { types: ['bytes4', 'bytes32'], values: ['0xDEADBEEF', `0x${'11'.repeat(32)}`] },
    // Two dynamic values: the second's offset counts the first's tail.
    { types: ['bytes', 'uint256', 'string'], values: ['0x', 7n, ''] },
    { types: ['string', 'bytes'], values: ['héllo, wörld', `0x${'ab'.repeat(33)}`] },
    { types: ['string', 'string', 'string'], values: ['a', 'x'.repeat(64), '€'.repeat(11)] },
  ]

  for (const { types, values } of cases)
    it(`${types.join(', ')}`, () => {
      const kinds = kindsOf(...types)
      expect(kinds).toBeDefined()
      const ours = encodeWords(kinds!, values, '0x12345678')
      expect(ours).toBe(`0x12345678${coder.encode(types, values).slice(2).toLowerCase()}`)
    })

  it('answers undefined for a string that is not well-formed UTF-16 (ethers then decides)', () => {
    expect(encodeWords(kindsOf('string')!, ['\ud800'], '0x')).toBeUndefined()
    expect(encodeWords(kindsOf('uint256', 'string')!, [1n, 'ok\udfff'], '0x')).toBeUndefined()
    expect(encodeWords(kindsOf('string')!, ['\ud83d\ude00'], '0x')).toBe(
      coder.encode(['string'], ['\ud83d\ude00']),
    )
  })
})
