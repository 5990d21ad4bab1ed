import { AbiCoder, id } from 'ethers'
import { describe, expect, it } from 'vitest'
import { TASK_TYPES } from '../../../src/pipeline/index.ts'
import { Decimal } from '../../../src/reduce/index.ts'
import { memoizedAbi, shortReason } from '../../../src/pipeline/tasks/ethabiencode.ts'
import { runTask, failureOf as refusal } from '../support/task.ts'

/**
 * ethabiencode's edges: what the loader's check says of a spec, how each Solidity type takes the
 * values a spec gives it (and the words of each refusal, which name the argument a user must fix),
 * and the bounded ABI cache other ABI tasks share.
 */
const coder = AbiCoder.defaultAbiCoder()
const check = (attributes: Record<string, string>) =>
  TASK_TYPES.get('ethabiencode')!.check!(attributes)
const encode = (abi: string, vars: Record<string, unknown>) =>
  runTask('ethabiencode', { abi, data: '$(data)' }, { vars: { data: vars } })
const args = (types: string[], values: unknown[]) => coder.encode(types, values)
const ADDRESS = '0x00000000000000000000000000000000000000ab'

describe('ethabiencode check: what the loader says of a spec', () => {
  const EXPECTED =
    '; it must be a function such as "fulfill(bytes32 requestId, uint256 value)" or an argument list such as "(bytes32 requestId, uint256 value)", in Solidity types'

  it('an ABI that does not parse: the short reason, then what it must be', () => {
    expect(check({ abi: 'f(uint257 a)' })).toEqual([
      {
        attribute: 'abi',
        message: `not a function or argument list (invalid function fragment)${EXPECTED}`,
      },
    ])
    expect(check({})).toEqual(check({ abi: '' }))
    expect(check({})[0]!.message).toBe(
      `not a function or argument list (invalid function fragment)${EXPECTED}`,
    )
  })

  it('an unnamed argument: which one, counted from 1, and its type', () => {
    expect(check({ abi: 'f(uint256 a, bytes32)' })).toEqual([
      {
        attribute: 'abi',
        message: `bad ABI specification, missing argument name (argument 2, bytes32)${EXPECTED}`,
      },
    ])
  })

  it('data written as JSON: every argument it leaves out, by name', () => {
    const abi = '(uint256 a, bool b, string c)'
    expect(check({ abi })).toEqual([])
    expect(check({ abi, data: '{"a": 1, "b": true, "c": "x"}' })).toEqual([])
    expect(check({ abi, data: '{"a": $(x), "b": $(y.z)}' })).toEqual([
      { attribute: 'data', message: 'has no value for argument c' },
    ])
    expect(check({ abi, data: '{"b": true}' })).toEqual([
      { attribute: 'data', message: 'has no value for argument a, c' },
    ])
    // Blank data is an empty object: every argument is missing.
    expect(check({ abi, data: '  ' })).toEqual([
      { attribute: 'data', message: 'has no value for argument a, b, c' },
    ])
    expect(check({ abi: 'noArgs()', data: '' })).toEqual([])
  })

  it('data that is a variable, not an object or not JSON: left to the run, which says so', () => {
    const abi = 'f(uint256 a)'
    for (const data of ['$(x)', ' $(x.y) ', '[1]', 'null', '{"a": ', '"a"'])
      expect(check({ abi, data }), data).toEqual([])
  })
})

describe('ethabiencode run: the data and the calldata', () => {
  it('a function gets its selector; an argument list gets none', async () => {
    const selector = id('f(uint256,string)').slice(0, 10)
    const words = args(['uint256', 'string'], [7n, 'hi']).slice(2)
    expect(await encode('f(uint256 a, string s)', { a: 7, s: 'hi' })).toBe(`${selector}${words}`)
    expect(await encode(' (uint256 a, string s) ', { a: 7, s: 'hi' })).toBe(`0x${words}`)
    // Arrays go through ethers' coder, with the selector too.
    const arrays = args(['uint8[]'], [[1n, 2n]]).slice(2)
    expect(await encode('g(uint8[] a)', { a: [1, 2] })).toBe(
      `${id('g(uint8[])').slice(0, 10)}${arrays}`,
    )
    expect(await encode('(uint8[] a)', { a: [1, '2'] })).toBe(`0x${arrays}`)
  })

  it('data that is not an object, or lacks an argument, is refused by name and type', async () => {
    const notObject = await refusal(encode('f(uint256 a)', [1] as never))
    expect(notObject.message).toBe('data must be a JSON object of argument values by name')
    expect(notObject.kind).toBe('bad_input')
    const missing = await refusal(encode('f(uint256 a, bool b)', { a: 1 }))
    expect(missing.message).toBe('data: no value for argument b (bool)')
    // An inherited name is not a value.
    expect((await refusal(encode('f(string toString)', {}))).message).toBe(
      'data: no value for argument toString (string)',
    )
    // No data at all is an empty object.
    expect(await runTask('ethabiencode', { abi: 'noArgs()' })).toBe('0x83c962bb')
  })

  it('a string that is not well-formed UTF-16 cannot be encoded: the function and the reason', async () => {
    const error = await refusal(encode('f(uint256 a, string s)', { a: 1, s: 'x\ud800' }))
    expect(error.message).toMatch(/^cannot encode f\(uint256,string\): invalid surrogate pair/)
    expect(error.kind).toBe('bad_input')
    const list = await refusal(encode('(string s)', { s: '\ud800' }))
    expect(list.message).toMatch(/^cannot encode .*: invalid surrogate pair/)
    expect(list.kind).toBe('bad_input')
  })
})

describe('ethabiencode: each type takes the values Chainlink takes', () => {
  it('integers: numbers, text, Decimals, bigints and booleans, truncated toward zero, within range', async () => {
    const types = ['uint8', 'int8', 'int256', 'uint256', 'int16', 'uint64']
    const abi = '(uint8 a, int8 b, int256 c, uint256 d, int16 e, uint64 f)'
    expect(
      await encode(abi, {
        a: 255,
        b: '-128',
        c: new Decimal('-2.9'),
        d: 2n ** 256n - 1n,
        e: true,
        f: false,
      }),
    ).toBe(args(types, [255n, -128n, -2n, 2n ** 256n - 1n, 1n, 0n]))
    const refused = async (type: string, value: unknown) =>
      (await refusal(encode(`(${type} v)`, { v: value }))).message
    expect(await refused('uint8', 256)).toBe('data.v: 256 is out of range for uint8')
    expect(await refused('uint8', -1n)).toBe('data.v: -1 is out of range for uint8')
    expect(await refused('int8', 128)).toBe('data.v: 128 is out of range for int8')
    expect(await refused('int8', '-129')).toBe('data.v: -129 is out of range for int8')
    expect(await refused('int256', 2n ** 255n)).toBe(
      `data.v: ${2n ** 255n} is out of range for int256`,
    )
    expect(await refused('uint256', 2n ** 256n)).toBe(
      `data.v: ${2n ** 256n} is out of range for uint256`,
    )
    expect(await refused('uint16', 'lots')).toBe('data.v: not a number: "lots"')
    // The edges themselves fit.
    expect(await encode('(int256 v)', { v: -(2n ** 255n) })).toBe(args(['int256'], [-(2n ** 255n)]))
    expect(await encode('(int8 v)', { v: 127 })).toBe(args(['int8'], [127n]))
  })

  it('booleans: true and false, or their text; anything else is refused', async () => {
    expect(
      await encode('(bool a, bool b, bool c, bool d)', {
        a: 'true',
        b: 'false',
        c: true,
        d: false,
      }),
    ).toBe(args(['bool', 'bool', 'bool', 'bool'], [true, false, true, false]))
    expect((await refusal(encode('(bool b)', { b: 'yes' }))).message).toBe(
      'data.b: expected a boolean, got "yes"',
    )
    expect((await refusal(encode('(bool b)', { b: 1 }))).message).toBe(
      'data.b: expected a boolean, got 1',
    )
  })

  it('addresses: 0x and 40 hex digits in any case, or 20 bytes', async () => {
    const mixed = '0x00000000000000000000000000000000000000aB'
    const bytes = new Uint8Array(20).fill(0xcd)
    expect(await encode('(address a, address b)', { a: mixed, b: bytes })).toBe(
      args(['address', 'address'], [ADDRESS, `0x${'cd'.repeat(20)}`]),
    )
    // In an array (ethers' coder), too.
    expect(await encode('(address[] a)', { a: [mixed.toUpperCase().replace('0X', '0x')] })).toBe(
      args(['address[]'], [[ADDRESS]]),
    )
    const refused = async (value: unknown) =>
      (await refusal(encode('(address a)', { a: value }))).message
    expect(await refused(`${ADDRESS}00`)).toBe(`data.a: expected an address, got "${ADDRESS}00"`)
    expect(await refused(` ${ADDRESS}`)).toBe(`data.a: expected an address, got " ${ADDRESS}"`)
    expect(await refused(`${ADDRESS.slice(0, -1)}g`)).toMatch(/^data\.a: expected an address/)
    expect(await refused(new Uint8Array(19))).toBe('data.a: expected an address, got 19 bytes')
    expect(await refused(12)).toBe('data.a: expected an address, got 12')
    expect(await refused([ADDRESS])).toBe('data.a: expected an address, got an array')
  })

  it('strings: text as it is; numbers, booleans, Decimals and bytes as their text', async () => {
    const abi = '(string a, string b, string c, string d, string e, string f)'
    expect(
      await encode(abi, {
        a: 'héllo',
        b: 1.5,
        c: 10n ** 20n,
        d: true,
        e: new Decimal('1e-3'),
        f: new TextEncoder().encode('ok'),
      }),
    ).toBe(
      args(Array(6).fill('string'), [
        'héllo',
        '1.5',
        '100000000000000000000',
        'true',
        '0.001',
        'ok',
      ]),
    )
    expect((await refusal(encode('(string s)', { s: { x: 1 } }))).message).toBe(
      'data.s: expected a string, got an object',
    )
    expect((await refusal(encode('(string s)', { s: null }))).message).toBe(
      'data.s: expected a string, got null',
    )
  })

  it('fixed bytes: 0x-hex of the size, or text of exactly the size in UTF-8', async () => {
    expect(
      await encode('(bytes4 a, bytes4 b, bytes4 c, bytes2 d)', {
        a: '0xDEADBEEF',
        b: 'abcd',
        c: 'abé',
        d: new Uint8Array([1, 2]),
      }),
    ).toBe(
      args(
        ['bytes4', 'bytes4', 'bytes4', 'bytes2'],
        ['0xdeadbeef', '0x61626364', '0x6162c3a9', '0x0102'],
      ),
    )
    const refused = async (value: unknown) =>
      (await refusal(encode('(bytes4 b)', { b: value }))).message
    expect(await refused('abc')).toBe(
      'data.b: expected 4 bytes (0x-hex, or text of exactly 4 bytes), got "abc"',
    )
    expect(await refused('abcde')).toMatch(/^data\.b: expected 4 bytes \(0x-hex/)
    expect(await refused('0x010203')).toBe('data.b: expected 4 bytes, got 3')
    expect(await refused(new Uint8Array(5))).toBe('data.b: expected 4 bytes, got 5')
    // The dynamic bytes type takes any length.
    expect(await encode('(bytes b)', { b: '0x010203' })).toBe(args(['bytes'], ['0x010203']))
    // A list is refused, even one whose text would read as hex ("0xab").
    expect((await refusal(encode('(bytes b)', { b: ['0xab'] }))).message).toBe(
      'data.b: expected bytes or a 0x-hex string, got an array',
    )
  })

  it('arrays: a list, of the fixed length when there is one; a bad element is named by its index', async () => {
    expect(await encode('(uint8[2] a, bool[] b)', { a: [1, 2], b: [] })).toBe(
      args(['uint8[2]', 'bool[]'], [[1n, 2n], []]),
    )
    expect(await encode('(uint8[] a)', { a: [] })).toBe(args(['uint8[]'], [[]]))
    const refused = async (abi: string, value: unknown) =>
      (await refusal(encode(abi, { a: value }))).message
    expect(await refused('(uint8[] a)', 5)).toBe('data.a: expected an array for uint8[], got 5')
    expect(await refused('(uint8[2] a)', [1])).toBe('data.a: expected 2 elements, got 1')
    expect(await refused('(uint8[0] a)', [1])).toBe('data.a: expected 0 elements, got 1')
    expect(await refused('(uint8[][] a)', [[1], [2, 300]])).toBe(
      'data.a[1][1]: 300 is out of range for uint8',
    )
  })

  it('tuples: an object by component name, or a list in component order', async () => {
    const abi = '((uint8 x, string y) a)'
    const expected = args(['(uint8,string)'], [[3n, 'z']])
    expect(await encode(abi, { a: { x: 3, y: 'z' } })).toBe(expected)
    expect(await encode(abi, { a: [3, 'z'] })).toBe(expected)
    const refused = async (value: unknown) => (await refusal(encode(abi, { a: value }))).message
    expect(await refused([3])).toBe('data.a: expected an object for (uint8,string)')
    expect(await refused('x')).toBe('data.a: expected an object for (uint8,string)')
    expect(await refused([300, 'z'])).toBe('data.a[0]: 300 is out of range for uint8')
    expect(await refused({ x: 3 })).toBe('data.a.y: expected a string, got nothing')
  })
})

describe('the parsed-ABI cache the ABI tasks share', () => {
  it('parses a text once, and is cleared when it reaches its cap of 512', () => {
    const cache = new Map<string, number>()
    let parses = 0
    const parse = (text: string) => {
      parses += 1
      return text.length
    }
    expect(memoizedAbi(cache, 'abc', parse)).toBe(3)
    expect(memoizedAbi(cache, 'abc', parse)).toBe(3)
    expect(parses).toBe(1)
    for (let index = 1; index < 512; index += 1) memoizedAbi(cache, `t${index}`, parse)
    expect(cache.size).toBe(512)
    memoizedAbi(cache, 'one more', parse)
    expect([...cache.keys()]).toEqual(['one more'])
    expect(memoizedAbi(cache, 'abc', parse)).toBe(3)
    expect(parses).toBe(514)
  })

  it("shortReason keeps ethers' first clause", () => {
    expect(shortReason({ shortMessage: 'bad type', message: 'bad type (argument="x")' })).toBe(
      'bad type',
    )
    expect(shortReason(new Error('invalid value (argument="v", value=1)'))).toBe('invalid value')
    expect(shortReason(new Error('plain'))).toBe('plain')
    expect(shortReason('text')).toBe('text')
    // An error whose details are not an argument's: its short message.
    let overrun: unknown
    try {
      coder.decode(['uint256'], '0x')
    } catch (error) {
      overrun = error
    }
    expect((overrun as Error).message).toMatch(/^data out-of-bounds \(buffer=/)
    expect(shortReason(overrun)).toBe('data out-of-bounds')
  })
})
