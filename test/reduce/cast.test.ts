import { describe, expect, it } from 'vitest'
import { castValue, reduce, ReduceError } from '../../src/reduce/index.ts'

function failure(run: () => unknown): ReduceError {
  try {
    run()
  } catch (error) {
    if (error instanceof ReduceError) return error
    throw error
  }
  throw new Error('expected a ReduceError')
}

describe('castValue: integers', () => {
  it('multiplies exactly, then floors', () => {
    expect(castValue(1.44, 'uint256', { times: 100 })).toBe(144n)
    expect(castValue('0.1', 'uint256', { times: '3' })).toBe(0n)
    expect(castValue(0.1, 'uint256', { times: 30 })).toBe(3n) // 0.1*30 in floats is 3.0000000000000004
    expect(castValue(1.005, 'uint256', { times: 1000 })).toBe(1005n) // floats say 1004.9999999999999
    expect(castValue('123456789012345678901234567890.5', 'uint256', { times: '10' })).toBe(
      1234567890123456789012345678905n,
    )
    expect(castValue(12n, 'uint256', { times: '1000000000000000000' })).toBe(
      12_000_000_000_000_000_000n,
    )
    expect(castValue('1e3', 'uint256')).toBe(1000n)
    expect(castValue(' 42 ', 'uint256')).toBe(42n)
  })

  it('floors negatives by default (Airnode) and truncates toward zero on request (ethabiencode)', () => {
    expect(castValue(-1.5, 'int256')).toBe(-2n)
    expect(castValue(-1.5, 'int256', { truncation: 'trunc' })).toBe(-1n)
    expect(castValue('-2.71', 'int256', { times: 10 })).toBe(-28n)
    expect(castValue('-2.71', 'int256', { times: 10, truncation: 'trunc' })).toBe(-27n)
    expect(castValue(2.99, 'uint256', { truncation: 'trunc' })).toBe(2n)
  })

  it('takes booleans as 1 and 0', () => {
    expect(castValue(true, 'uint256')).toBe(1n)
    expect(castValue(false, 'int256')).toBe(0n)
  })

  it.each([null, undefined, Number.NaN, '', 'abc', '0x10', {}, [1], Infinity, '1,5'])(
    'refuses %s',
    (value) => {
      expect(failure(() => castValue(value, 'uint256')).code).toBe('CAST')
      expect(failure(() => castValue(value, 'int256')).code).toBe('CAST')
    },
  )

  it('refuses negatives into uint256 and values out of range', () => {
    expect(failure(() => castValue(-1, 'uint256')).message).toBe('-1 is negative for uint256')
    expect(castValue(-0.5, 'uint256', { truncation: 'trunc' })).toBe(0n)
    expect(castValue((1n << 256n) - 1n, 'uint256')).toBe((1n << 256n) - 1n)
    expect(failure(() => castValue(1n << 256n, 'uint256')).message).toContain('out of range')
    expect(failure(() => castValue(1n << 255n, 'int256')).message).toContain('out of range')
    expect(castValue(-(1n << 255n), 'int256')).toBe(-(1n << 255n))
  })

  it('refuses a times that is not a decimal', () => {
    expect(failure(() => castValue(1, 'uint256', { times: 'ten' })).code).toBe('BAD_TIMES')
    expect(failure(() => castValue(1, 'uint256', { times: Number.NaN })).code).toBe('BAD_TIMES')
    expect(failure(() => castValue('x', 'string', { times: 10 })).code).toBe('BAD_TIMES')
  })
})

describe('castValue: other types', () => {
  it('bool is false only for 0, "0", false, "false", null', () => {
    for (const value of [0, '0', false, 'false', null, 0n])
      expect(castValue(value, 'bool')).toBe(false)
    for (const value of [1, '1', true, 'true', 'no', '', 2, -1, {}, [], 'False'])
      expect(castValue(value, 'bool')).toBe(true)
  })

  it('bytes32 right-pads a short string, keeps a 32-byte hex, refuses longer', () => {
    expect(castValue('abc', 'bytes32')).toBe('0x616263' + '0'.repeat(58))
    expect(castValue('a'.repeat(32), 'bytes32')).toBe('0x' + '61'.repeat(32))
    const hex = '0x' + 'AB'.repeat(32)
    expect(castValue(hex, 'bytes32')).toBe(hex.toLowerCase())
    expect(failure(() => castValue('a'.repeat(33), 'bytes32')).message).toContain('33 bytes')
    expect(failure(() => castValue(null, 'bytes32')).code).toBe('CAST')
    expect(castValue(12, 'bytes32')).toBe('0x3132' + '0'.repeat(60))
  })

  it('string, address, bytes', () => {
    expect(castValue('Manchester United', 'string')).toBe('Manchester United')
    expect(castValue(1.5, 'string')).toBe('1.5')
    expect(castValue(10n ** 30n, 'string')).toBe('1000000000000000000000000000000')
    expect(castValue({ a: 1n }, 'string')).toBe('{"a":"1"}')
    expect(failure(() => castValue(null, 'string')).code).toBe('CAST')
    expect(castValue('0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', 'address')).toBe(
      '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    )
    expect(
      failure(() => castValue('0xE7f1725e7734ce288f8367e1bb143e90bb3f0512', 'address')).message,
    ).toContain('checksum')
    expect(failure(() => castValue('0x1234', 'address')).code).toBe('CAST')
    expect(castValue('0xABCD', 'bytes')).toBe('0xabcd')
    expect(castValue('hi', 'bytes')).toBe('0x6869')
    expect(failure(() => castValue('0xabc', 'bytes')).message).toContain('odd')
  })

  it('refuses an unknown type', () => {
    expect(failure(() => castValue(1, 'uint8')).code).toBe('BAD_TYPE')
  })
})

describe('reduce', () => {
  const envelope = {
    data: {
      homeMoneyLine: 1.44,
      homeTeamName: 'Man United',
      homeTeamScore: null,
      windgust: '12.5',
    },
  }
  it('evaluates, casts and scales', () => {
    expect(reduce(envelope, { path: '$.data.homeMoneyLine', type: 'uint256', times: 100 })).toBe(
      144n,
    )
    expect(reduce(envelope, { path: 'data,homeTeamName', type: 'string' })).toBe('Man United')
    expect(
      reduce(envelope, {
        path: 'data.windGust',
        type: 'int256',
        times: 10,
        aliases: { windGust: ['windgust'] },
      }),
    ).toBe(125n)
    expect(reduce(envelope, { path: 'data.homeMoneyLine' })).toBe(1.44)
  })

  it('multiplies without a type into an exact decimal string', () => {
    expect(reduce(envelope, { path: 'data.homeMoneyLine', times: 100 })).toBe('144')
    expect(reduce(envelope, { path: 'data.homeMoneyLine', times: '0.1' })).toBe('0.144')
  })

  it('names the path in cast errors', () => {
    expect(
      failure(() => reduce(envelope, { path: '$.data.homeTeamScore', type: 'uint256' })).message,
    ).toBe('path $.data.homeTeamScore: cannot cast null to uint256')
    expect(failure(() => reduce(envelope, { path: '$.data.homeTeamName', times: 2 })).message).toBe(
      'path $.data.homeTeamName: cannot multiply "Man United" by times',
    )
    expect(failure(() => reduce(envelope, { path: '$.data.x', type: 'uint256' })).message).toBe(
      'path $.data.x: no value at "data.x"',
    )
    expect(failure(() => reduce(envelope, { path: '$.data.x', type: 'float' })).message).toContain(
      'unknown type "float"',
    )
  })
})
