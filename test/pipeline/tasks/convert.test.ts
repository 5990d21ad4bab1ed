import { describe as group, expect, it } from 'vitest'
import { Decimal } from '../../../src/reduce/index.ts'
import {
  bytesOf,
  bytesParam,
  decimalOf,
  describe,
  hexOf,
  int32Attribute,
  integerAttribute,
  stringParam,
} from '../../../src/pipeline/tasks/convert.ts'
import { runTask, taskFailure } from '../support/task.ts'

/**
 * The conversions many task types share (Chainlink's *Param types): each task's tests see them only
 * through its own happy path, so the edges and the words of their refusals are pinned here.
 */
group('task value conversions', () => {
  it('describe names a value the way a refusal quotes it', () => {
    expect(describe(null)).toBe('null')
    expect(describe(undefined)).toBe('nothing')
    expect(describe('a"b')).toBe('"a\\"b"')
    expect(describe('x'.repeat(80))).toBe(JSON.stringify('x'.repeat(80)))
    expect(describe('x'.repeat(81))).toBe(JSON.stringify(`${'x'.repeat(80)}...`))
    expect(describe(12n)).toBe('12')
    expect(describe(1.5)).toBe('1.5')
    expect(describe(false)).toBe('false')
    expect(describe(new Decimal('1e-3'))).toBe('0.001')
    expect(describe(new Uint8Array(3))).toBe('3 bytes')
    expect(describe([1])).toBe('an array')
    expect(describe({ a: 1 })).toBe('an object')
  })

  it('decimalOf takes numbers, decimals and numeric text or bytes, and names what it refuses', () => {
    expect(decimalOf(new Decimal('2.5'), 'x').toFixed()).toBe('2.5')
    expect(decimalOf(new TextEncoder().encode('-7.25'), 'x').toFixed()).toBe('-7.25')
    expect(decimalOf(10n ** 30n, 'x').toFixed()).toBe(`1${'0'.repeat(30)}`)
    expect(() => decimalOf('abc', 'times')).toThrow('times: not a number: "abc"')
    expect(() => decimalOf(new TextEncoder().encode('zz'), 'times')).toThrow(
      'times: not a number: "zz"',
    )
  })

  it("a JSON object carrying decimal.js's tag is an object, not a number", async () => {
    // decimal.js's own isDecimal takes any object whose toStringTag is "[object Decimal]"; an
    // answer from a data source can carry one, and it was read as the number its fields spell.
    const body = '{"price": {"toStringTag": "[object Decimal]", "s": 1, "e": 5, "d": [123456]}}'
    const price = await runTask('jsonparse', { path: 'price', data: '$(body)' }, { vars: { body } })
    expect(describe(price)).toBe('an object')
    expect(() => decimalOf(price, 'input')).toThrow('input: not a number: an object')
    const multiplied = runTask('multiply', { input: '$(price)', times: '2' }, { vars: { price } })
    expect((await taskFailure(multiplied)).message).toBe('input: not a number: an object')
  })

  it('bytesOf and hexOf: 0x whole-byte hex decoded, any other text as UTF-8, other values refused', () => {
    expect([...bytesOf('0x0aFF', 'data')]).toEqual([10, 255])
    expect([...bytesOf('0x0aF', 'data')]).toEqual([...new TextEncoder().encode('0x0aF')])
    expect([...bytesOf('hi', 'data')]).toEqual([104, 105])
    expect(() => bytesOf(5n, 'data')).toThrow('data: expected bytes or a 0x-hex string, got 5')
    expect(hexOf('0xABcd', 'data')).toBe('0xabcd')
    expect(hexOf('hi', 'data')).toBe('0x6869')
    expect(hexOf(new Uint8Array([1, 2]), 'data')).toBe('0x0102')
    // Only a string is read as hex text: a list whose text is "0xab" is no bytes.
    expect(() => hexOf(['0xab'], 'data')).toThrow(
      'data: expected bytes or a 0x-hex string, got an array',
    )
    expect([...bytesParam(null, 'data')]).toEqual([])
    expect(() => bytesParam(undefined, 'data')).toThrow(
      'data: expected bytes or a 0x-hex string, got nothing',
    )
  })

  it('integerAttribute: absent or empty is the fallback; a non-negative safe integer, or a refusal', () => {
    expect(integerAttribute(undefined, 'retries', 3)).toBe(3)
    expect(integerAttribute('', 'retries', 3)).toBe(3)
    expect(integerAttribute('0', 'retries', 3)).toBe(0)
    expect(integerAttribute(7n, 'retries', 3)).toBe(7)
    expect(() => integerAttribute('-1', 'retries', 3)).toThrow(
      'retries must be a non-negative integer, got "-1"',
    )
    expect(() => integerAttribute('1.5', 'retries', 3)).toThrow('got "1.5"')
    expect(() => integerAttribute(2n ** 53n, 'retries', 3)).toThrow('got 9007199254740992')
  })

  it('int32Attribute: a whole number within int32, sign allowed, trimmed; undefined when not given', () => {
    expect(int32Attribute(undefined, 'index')).toBeUndefined()
    expect(int32Attribute(null, 'index')).toBeUndefined()
    expect(int32Attribute('', 'index')).toBeUndefined()
    expect(int32Attribute(' -5 ', 'index')).toBe(-5)
    expect(int32Attribute('+2147483647', 'index')).toBe(2 ** 31 - 1)
    expect(int32Attribute(-(2 ** 31 - 1), 'index')).toBe(-(2 ** 31 - 1))
    expect(() => int32Attribute('2147483648', 'index')).toThrow(
      'index must be a whole number (int32), got "2147483648"',
    )
    expect(() => int32Attribute('1x', 'index')).toThrow('got "1x"')
    expect(() => int32Attribute('x1', 'index')).toThrow('got "x1"')
    expect(() => int32Attribute('1.0', 'index')).toThrow('got "1.0"')
  })

  it('stringParam: text, or bytes read as UTF-8; anything else refused', () => {
    expect(stringParam('a', 'path')).toBe('a')
    expect(stringParam(new TextEncoder().encode('é'), 'path')).toBe('é')
    expect(() => stringParam(1n, 'path')).toThrow('path: expected a string, got 1')
  })
})
