import { describe, expect, it } from 'vitest'
import {
  aliasResolver,
  castValue,
  Decimal,
  evaluatePath,
  lookupWithAliases,
  parseSimpleJsonPath,
  parseTimes,
  PathBudget,
  reduce,
  ReduceError,
  splitPath,
  toBigInt,
  toDecimal,
  withAliasTwins,
} from '../../src/reduce/index.ts'
import { cut, quoted } from '../../src/reduce/errors.ts'
import { budgetedJsonPath, takeValues } from '../../src/reduce/path-budget.ts'

// The edges of src/reduce: each bound at its exact value, each message as a requester reads it.

function failure(run: () => unknown): ReduceError {
  try {
    run()
  } catch (error) {
    if (error instanceof ReduceError) return error
    throw error
  }
  throw new Error('expected a ReduceError')
}

describe('messages', () => {
  it('repeat at most 64 characters of a value, then say how long it was', () => {
    expect(cut('x'.repeat(64))).toBe('x'.repeat(64))
    expect(cut('x'.repeat(65))).toBe(`${'x'.repeat(64)}... (65 characters)`)
    expect(cut('abcdef', 3)).toBe('abc... (6 characters)')
    expect(quoted(12)).toBe('"12"')
  })

  it('name the path, cut, and the bound of a budget', () => {
    const long = `$.${'a'.repeat(100)}`
    const error = new ReduceError('NO_VALUE', 'no value', long)
    expect(error.message).toBe(`path ${cut(long)}: no value`)
    expect(error.name).toBe('ReduceError')
    expect(error.kind).toBe('bad_input')
    expect(error.bound).toBeUndefined()
    expect(new ReduceError('CAST', 'bad').message).toBe('bad')
    expect(new ReduceError('OVER_BUDGET', 'too much').bound).toBe('PATH_MAX_VALUES')
  })

  it('keep the first path an error was given', () => {
    const error = new ReduceError('CAST', 'bad').withPath('$.a').withPath('$.b')
    expect([error.path, error.message, error.code]).toEqual(['$.a', 'path $.a: bad', 'CAST'])
  })

  it('describe what could not be cast', () => {
    const said = (value: unknown) => failure(() => castValue(value, 'uint256')).message
    expect(said(null)).toBe('cannot cast null to uint256')
    expect(said(undefined)).toBe('cannot cast no value to uint256')
    expect(said(Number.NaN)).toBe('cannot cast NaN to uint256')
    expect(said(Infinity)).toBe('cannot cast Infinity to uint256')
    expect(said('')).toBe('cannot cast an empty string to uint256')
    expect(said('abc')).toBe('cannot cast "abc" to uint256')
    expect(said('y'.repeat(61))).toBe(`cannot cast "${'y'.repeat(60)}..." to uint256`)
    expect(said('y'.repeat(60))).toBe(`cannot cast "${'y'.repeat(60)}" to uint256`)
    expect(said([1])).toBe('cannot cast an array to uint256')
    expect(said({})).toBe('cannot cast a object to uint256')
    expect(failure(() => castValue({}, 'bytes32')).message).toBe('cannot cast a object to bytes32')
    expect(failure(() => castValue(undefined, 'string')).message).toBe(
      'cannot cast no value to string',
    )
    expect(failure(() => castValue(1, 'address')).message).toBe('cannot cast 1 to address')
    expect(failure(() => castValue(1, 'bool', { times: 2 })).message).toBe(
      'times applies to uint256 and int256 only, not to bool',
    )
    expect(failure(() => castValue(1, 'uint8')).message).toBe(
      'unknown type "uint8" (expected one of uint256, int256, bool, bytes32, string, address, bytes)',
    )
  })
})

describe('decimals', () => {
  it('reads decimal text in every form and nothing else', () => {
    for (const text of ['1', '+1', '-1', '1.', '.5', '1.5e3', '1E-4', '2e+10', ' 7 '])
      expect(toDecimal(text), text).toBeInstanceOf(Decimal)
    for (const text of ['', '.', '1e', '1e12345', '0x10', '1_000', '--1', '1.2.3', 'e5'])
      expect(toDecimal(text), text).toBeUndefined()
    expect(toDecimal('1'.repeat(200))?.toFixed()).toBe('1'.repeat(200))
    expect(toDecimal('1'.repeat(201))).toBeUndefined()
    expect(toDecimal(new Decimal('2.5'))?.toFixed()).toBe('2.5')
    expect(toDecimal(12n)?.toFixed()).toBe('12')
    expect(toDecimal(-Infinity)).toBeUndefined()
    expect(toDecimal(true)).toBeUndefined()
    expect(toDecimal('1e3')?.toFixed()).toBe('1000')
  })

  it('keeps 400 digits exact and names a bad times', () => {
    const big = '9'.repeat(200)
    expect(toDecimal(big)!.times(parseTimes(big)).toFixed()).toBe(
      (BigInt(big) * BigInt(big)).toString(),
    )
    expect(toDecimal('1e-999')!.toString()).toBe(`0.${'0'.repeat(998)}1`)
    expect(failure(() => parseTimes('ten')).message).toBe(
      'times must be a decimal number, got "ten"',
    )
  })

  it('floors or truncates to an integer', () => {
    expect(toBigInt(new Decimal('-2.5'), 'floor')).toBe(-3n)
    expect(toBigInt(new Decimal('-2.5'), 'trunc')).toBe(-2n)
    expect(toBigInt(new Decimal('2.9'), 'floor')).toBe(2n)
  })

  it('bounds each integer type at its own ends', () => {
    expect(failure(() => castValue(-1, 'uint256')).message).toBe('-1 is negative for uint256')
    expect(failure(() => castValue((1n << 256n).toString(), 'uint256')).message).toBe(
      `${1n << 256n} is out of range for uint256`,
    )
    expect(failure(() => castValue(-(1n << 255n) - 1n, 'int256')).message).toBe(
      `${-(1n << 255n) - 1n} is out of range for int256`,
    )
    expect(castValue((1n << 255n) - 1n, 'int256')).toBe((1n << 255n) - 1n)
    expect(castValue(-1, 'int256')).toBe(-1n)
  })
})

describe('other casts', () => {
  it('bool: a bigint is false only for 0', () => {
    expect(castValue(2n, 'bool')).toBe(true)
    expect(castValue(undefined, 'bool')).toBe(false)
  })

  it('bytes32: keeps 32 bytes of hex, lower-cased, and counts bytes, not characters', () => {
    expect(castValue('0x' + 'Ab'.repeat(32), 'bytes32')).toBe('0x' + 'ab'.repeat(32))
    // 31 bytes of hex are not 32 bytes: they are 64 characters of text, too long.
    expect(failure(() => castValue('0x' + 'ab'.repeat(31), 'bytes32')).message).toContain(
      'is 64 bytes, more than bytes32 holds',
    )
    expect(failure(() => castValue('\u00e9'.repeat(17), 'bytes32')).message).toBe(
      `"${'\u00e9'.repeat(17)}" is 34 bytes, more than bytes32 holds`,
    )
    expect(castValue(true, 'bytes32')).toBe('0x74727565' + '0'.repeat(56))
    expect(castValue(5n, 'bytes32')).toBe('0x35' + '0'.repeat(62))
  })

  it('string: JSON for arrays and objects, text for the rest', () => {
    expect(castValue([1, 'a'], 'string')).toBe('[1,"a"]')
    expect(castValue(false, 'string')).toBe('false')
  })

  it('address: checksums a lower-case address, refuses any other length', () => {
    expect(failure(() => castValue('0x' + 'a'.repeat(41), 'address')).code).toBe('CAST')
    expect(failure(() => castValue('x0x' + 'a'.repeat(40), 'address')).code).toBe('CAST')
    expect(
      failure(() => castValue('0xE7f1725e7734ce288f8367e1bb143e90bb3f0512', 'address')).message,
    ).toBe('0xE7f1725e7734ce288f8367e1bb143e90bb3f0512 has a wrong EIP-55 checksum')
  })

  it('bytes: hex as bytes, bytes as hex, text and numbers as their UTF-8', () => {
    expect(castValue(new Uint8Array([1, 255]), 'bytes')).toBe('0x01ff')
    expect(castValue(12, 'bytes')).toBe('0x3132')
    expect(castValue('0x', 'bytes')).toBe('0x')
    expect(failure(() => castValue('0xabc', 'bytes')).message).toBe(
      '0xabc has an odd number of hex digits',
    )
    expect(failure(() => castValue(null, 'bytes')).message).toBe('cannot cast null to bytes')
  })
})

describe('aliases', () => {
  it('read a map in both directions and among the aliases of one name', () => {
    const resolve = aliasResolver({ a: ['b', 'c'], d: ['e'] })
    expect(resolve('a')).toEqual(['b', 'c'])
    expect(resolve('b')).toEqual(['a', 'c'])
    expect(resolve('e')).toEqual(['d'])
    expect(resolve('z')).toEqual([])
    expect(aliasResolver({ a: ['b'], b: ['a', 'c'] })('a')).toEqual(['b', 'c'])
    expect(aliasResolver(undefined)('a')).toEqual([])
    expect(aliasResolver((name) => [name, `${name}2`])('a')).toEqual(['a2'])
  })

  it('look up the exact key first, then each alias in order, own keys only', () => {
    const resolve = aliasResolver({ a: ['b', 'c'] })
    expect(lookupWithAliases({ c: 3, b: 2 }, 'a', resolve)).toEqual({ found: true, value: 2 })
    expect(lookupWithAliases({ c: 3 }, 'a', resolve)).toEqual({ found: true, value: 3 })
    expect(lookupWithAliases({ a: undefined }, 'a', resolve)).toEqual({
      found: true,
      value: undefined,
    })
    expect(lookupWithAliases(Object.create({ a: 1 }), 'a', resolve)).toEqual({ found: false })
  })

  it('add the missing twins at every level, counting each value copied, to 64 levels', () => {
    const resolve = aliasResolver({ a: ['b'] })
    let visits = 0
    const copy = withAliasTwins({ a: 1, list: [{ b: 2, a: 3 }], s: 'x' }, resolve, () => visits++)
    expect(copy).toEqual({ a: 1, b: 1, list: [{ b: 2, a: 3 }], s: 'x' })
    expect(visits).toBe(3)
    let deep: unknown = { a: 1 }
    for (let level = 0; level < 70; level++) deep = { n: deep }
    let twin = withAliasTwins(deep, resolve) as Record<string, unknown>
    for (let level = 0; level < 64; level++) twin = twin.n as Record<string, unknown>
    // Past 64 levels the value is the original, not a copy with twins.
    let original = deep as Record<string, unknown>
    for (let level = 0; level < 64; level++) original = original.n as Record<string, unknown>
    expect(twin.n).toBe(original.n)
    expect(withAliasTwins(null, resolve)).toBeNull()
  })
})

describe('paths', () => {
  it('refuses a path over 1000 characters, showing its first 40', () => {
    const path = 'a'.repeat(1001)
    expect(failure(() => evaluatePath({}, path)).message).toBe(
      `path ${'a'.repeat(40)}...: longer than 1000 characters`,
    )
    expect(failure(() => evaluatePath({}, 'a'.repeat(1000))).code).toBe('NO_VALUE')
  })

  it('splits on a separator of any length, and refuses an empty one', () => {
    expect(splitPath('')).toEqual([])
    expect(splitPath('a.b')).toEqual(['a', 'b'])
    expect(splitPath('a.b,c')).toEqual(['a.b', 'c'])
    expect(splitPath('a::b\\::c', '::')).toEqual(['a', 'b::c'])
    expect(splitPath('a\\b.c')).toEqual(['a\\b', 'c'])
    expect(splitPath('.a.')).toEqual(['', 'a', ''])
    expect(failure(() => splitPath('a', '')).message).toBe('path a: the separator is empty')
  })

  it('parses names, indices and quoted names, and leaves anything richer to JSONPath', () => {
    expect(parseSimpleJsonPath('$')).toEqual([])
    expect(parseSimpleJsonPath('$.a_1.$b.c-d[0][-2]')).toEqual(['a_1', '$b', 'c-d', 0, -2])
    expect(parseSimpleJsonPath(`$['it\\'s']["say \\"hi\\""]`)).toEqual(["it's", 'say "hi"'])
    expect(parseSimpleJsonPath("$['']")).toEqual([''])
    for (const path of ['$..a', '$.1a', '$[*]', '$[1:]', '$.a[?(@)]', '$x', '$.'])
      expect(parseSimpleJsonPath(path), path).toBeUndefined()
  })

  it('reads `$` as a key when JSONPath is off', () => {
    expect(evaluatePath({ $: { a: 1 } }, '$.a', { jsonPath: false })).toBe(1)
    expect(evaluatePath({ a: 1 }, '$.a')).toBe(1)
  })

  it('says where a walk stopped', () => {
    expect(failure(() => evaluatePath({ a: null }, 'a.b')).message).toBe(
      'path a.b: no value at "a.b" (null has no fields)',
    )
    expect(failure(() => evaluatePath({ a: [1] }, 'a.1.5')).message).toBe(
      'path a.1.5: no value at "a.1" (index 1 out of range, length 1)',
    )
    expect(failure(() => evaluatePath({ a: [1] }, 'a.0.x')).message).toBe(
      'path a.0.x: no value at "a.0.x" (a number has no fields)',
    )
    expect(failure(() => evaluatePath({ a: [1] }, 'a.1e0')).message).toBe(
      'path a.1e0: no value at "a.1e0" (an array needs an integer index)',
    )
    expect(failure(() => evaluatePath({ a: undefined }, 'a')).message).toBe('path a: no value')
    expect(failure(() => evaluatePath({ a: undefined }, 'a.b')).message).toBe(
      'path a.b: no value at "a.b" (undefined has no fields)',
    )
    expect(failure(() => evaluatePath({ a: [1] }, `a.${'9'.repeat(20)}`)).code).toBe('NO_VALUE')
    expect(failure(() => evaluatePath({ a: [1] }, 'a.-2')).message).toContain(
      'index -2 out of range',
    )
  })

  it('gives one match as itself, several as an array, and reads a bare value', () => {
    expect(evaluatePath({ a: [{ b: 1 }] }, '$.a[*].b')).toBe(1)
    expect(evaluatePath({ a: [[1, 2]] }, '$.a[*]')).toEqual([1, 2])
    expect(evaluatePath({ a: [[1, 2], [3]] }, '$.a[*]')).toEqual([[1, 2], [3]])
    expect(failure(() => evaluatePath(5, '$..a')).message).toBe('path $..a: no value')
    expect(failure(() => evaluatePath({ a: [1] }, '$.a[?(@>0)]')).message).toMatch(
      /^path \$\.a\[\?\(@>0\)\]: not a valid JSONPath \(.+\)$/,
    )
  })
})

describe('the budget of a path', () => {
  it('counts each value once, to its maximum, and names the setting past it', () => {
    const budget = new PathBudget(3, '$.x')
    budget.take()
    budget.take(2)
    expect(budget.count).toBe(3)
    expect(failure(() => budget.take()).message).toBe(
      'path $.x: visits and returns more than 3 values (PATH_MAX_VALUES); it was stopped there. A path that reads one field visits a few: name the field, or raise PATH_MAX_VALUES',
    )
  })

  it('counts a value with everything in it, bytes as one', () => {
    const count = (value: unknown) => {
      const budget = new PathBudget(1_000, '$')
      takeValues(value, budget)
      return budget.count
    }
    expect(count({ a: [1, 2], b: { c: null } })).toBe(6)
    expect(count(new Uint8Array(100))).toBe(1)
    expect(count('text')).toBe(1)
  })

  it('counts the values of several matches, and not of a single one', () => {
    const single = new PathBudget(1_000, '$')
    budgetedJsonPath({ a: { b: [1, 2, 3] } }, '$.a.b', single)
    const several = new PathBudget(1_000, '$')
    budgetedJsonPath({ a: { b: [1, 2, 3] }, c: { b: [1, 2, 3] } }, '$.*.b', several)
    const steps = new PathBudget(1_000, '$')
    budgetedJsonPath({ a: { b: [1, 2, 3] }, c: { b: 0 } }, '$.*.b', steps)
    // Two matches of four values each over two of a number and a list.
    expect(several.count - steps.count).toBe(4 - 1)
    expect(single.count).toBeGreaterThan(0)
    expect(budgetedJsonPath('text', '$.a', new PathBudget(10, '$.a'))).toEqual([])
  })

  it('applies maxValues to a reduce', () => {
    expect(failure(() => reduce({ a: [1, 2, 3] }, { path: '$.a[*]', maxValues: 3 })).code).toBe(
      'OVER_BUDGET',
    )
  })
})

describe('reduce', () => {
  it('refuses an unknown type before reading, and says what cannot be multiplied', () => {
    expect(failure(() => reduce({}, { path: 'x', type: 'float' })).message).toBe(
      'path x: unknown type "float" (expected one of uint256, int256, bool, bytes32, string, address, bytes)',
    )
    expect(failure(() => reduce({ x: null }, { path: 'x', times: 2 })).message).toBe(
      'path x: cannot multiply null by times',
    )
    expect(failure(() => reduce({ x: [1] }, { path: 'x', times: 2 })).message).toBe(
      'path x: cannot multiply [1] by times',
    )
    expect(reduce({ x: '1.5' }, { path: 'x', times: '-2' })).toBe('-3')
    expect(
      reduce({ x: { y: 2.5 } }, { path: 'x.y', type: 'int256', times: 2, truncation: 'trunc' }),
    ).toBe(5n)
    expect(reduce({ 'a|b': 1 }, { path: 'a|b', separator: ',' })).toBe(1)
  })
})

describe('codes', () => {
  it('gives each refusal its code, which callers read instead of the words', () => {
    const code = (run: () => unknown) => failure(run).code
    expect(code(() => castValue(-1, 'uint256'))).toBe('CAST')
    expect(code(() => castValue('\u00e9'.repeat(17), 'bytes32'))).toBe('CAST')
    expect(code(() => castValue('0xE7f1725e7734ce288f8367e1bb143e90bb3f0512', 'address'))).toBe(
      'CAST',
    )
    expect(code(() => castValue('0xabc', 'bytes'))).toBe('CAST')
    expect(code(() => reduce({}, { path: 'x', type: 'float' }))).toBe('BAD_TYPE')
    expect(code(() => reduce({ x: null }, { path: 'x', times: 2 }))).toBe('CAST')
    expect(code(() => splitPath('a', ''))).toBe('BAD_PATH')
    expect(code(() => evaluatePath({ a: undefined }, 'a'))).toBe('NO_VALUE')
    expect(code(() => evaluatePath({ a: 1 }, '$..b'))).toBe('NO_VALUE')
  })
})
