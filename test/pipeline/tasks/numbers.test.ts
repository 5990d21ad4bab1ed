import { describe, expect, it } from 'vitest'
import { Decimal } from '../../../src/reduce/index.ts'
import { runTask } from '../support/task.ts'

const text = (value: unknown): string =>
  Decimal.isDecimal(value) ? value.toFixed() : String(value)

describe('multiply', () => {
  it('is exact where floats are not', async () => {
    expect(text(await runTask('multiply', { input: '0.1', times: '3' }))).toBe('0.3')
    expect(
      text(await runTask('multiply', { times: '1000000000000000000' }, { inputs: [1.005] })),
    ).toBe('1005000000000000000')
    expect(
      text(
        await runTask(
          'multiply',
          { input: '$(x)', times: '$(t)' },
          { vars: { x: 123456789012345678901234567890n, t: '0.5' } },
        ),
      ),
    ).toBe('61728394506172839450617283945')
  })
  it('takes the first input when input is omitted, and refuses non-numbers', async () => {
    expect(text(await runTask('multiply', { times: '-2' }, { inputs: ['2.5', '100'] }))).toBe('-5')
    await expect(runTask('multiply', { times: '2' }, { inputs: ['abc'] })).rejects.toThrow(
      'input: not a number: "abc"',
    )
    await expect(runTask('multiply', { times: 'x' }, { inputs: [1] })).rejects.toThrow(
      'times: not a number',
    )
    await expect(runTask('multiply', { times: '2' })).rejects.toThrow(
      'input: not given and the task has no input',
    )
  })
})

describe('divide', () => {
  it('rounds half away from zero to precision', async () => {
    expect(text(await runTask('divide', { input: '10', divisor: '3', precision: '2' }))).toBe(
      '3.33',
    )
    expect(text(await runTask('divide', { input: '-0.125', divisor: '1', precision: '2' }))).toBe(
      '-0.13',
    )
    expect(text(await runTask('divide', { input: '1', divisor: '8' }))).toBe('0.125')
    await expect(runTask('divide', { input: '1', divisor: '0' })).rejects.toThrow('divide by zero')
  })
})

describe('median, mean, mode, sum', () => {
  it('median of odd and even counts, from inputs', async () => {
    expect(text(await runTask('median', {}, { inputs: ['3', 1, 2n] }))).toBe('2')
    expect(text(await runTask('median', {}, { inputs: [4, 1, 3, 2] }))).toBe('2.5')
  })
  it('median tolerates faults up to allowedFaults (default: all but one)', async () => {
    expect(text(await runTask('median', {}, { inputs: [5], failedInputs: ['down', 'down'] }))).toBe(
      '5',
    )
    expect(
      text(
        await runTask('median', { allowedFaults: '1' }, { inputs: [5, 7], failedInputs: ['down'] }),
      ),
    ).toBe('6')
    await expect(
      runTask('median', { allowedFaults: '1' }, { inputs: [5], failedInputs: ['a', 'b'] }),
    ).rejects.toThrow('2 of 3 values failed, more than allowedFaults 1')
    await expect(runTask('median', {}, { failedInputs: ['a'] })).rejects.toThrow()
  })
  it('median of a values list with variables, a missing one counting as a fault', async () => {
    const vars = { a: 10, b: new Decimal('20.5') }
    expect(
      text(
        await runTask(
          'median',
          { values: '[ $(a), $(b), $(nothing) ]', allowedFaults: '1' },
          { vars },
        ),
      ),
    ).toBe('15.25')
    await expect(
      runTask('median', { values: '[ $(a), $(nothing) ]', allowedFaults: '0' }, { vars }),
    ).rejects.toThrow('more than allowedFaults 0')
  })
  it('mean with precision, sum exact, mode with ties', async () => {
    expect(text(await runTask('mean', { values: '[1, 2, 2]', precision: '3' }))).toBe('1.667')
    expect(text(await runTask('sum', { values: '[0.1, 0.2, "0.3"]' }))).toBe('0.6')
    expect(await runTask('mode', { values: '[1, 2, 2, "a", "a"]' })).toEqual({
      results: [2, 'a'],
      occurrences: 2,
    })
    // Ties in the order each value reached the top count; 2 and "2" are one value, as on a node.
    expect(await runTask('mode', { values: '["a", "b", "b", "a"]' })).toEqual({
      results: ['b', 'a'],
      occurrences: 2,
    })
    expect(await runTask('mode', { values: '[2, "2", 3]' })).toEqual({
      results: ['2'],
      occurrences: 2,
    })
  })
})

describe('any, lowercase, uppercase, hexencode', () => {
  it('any returns a successful input', async () => {
    expect(await runTask('any', {}, { inputs: ['x'], failedInputs: ['down'] })).toBe('x')
    await expect(runTask('any', {}, { failedInputs: ['down'] })).rejects.toThrow(
      'all 1 inputs failed',
    )
  })
  it('changes case of text only', async () => {
    expect(await runTask('lowercase', { input: 'ÄBC' })).toBe('äbc')
    expect(await runTask('uppercase', {}, { inputs: ['abc'] })).toBe('ABC')
    await expect(runTask('uppercase', {}, { inputs: [1] })).rejects.toThrow(
      'input must be a string',
    )
  })
  it('hexencode of text, bytes and integers', async () => {
    expect(await runTask('hexencode', { input: 'hi' })).toBe('0x6869')
    expect(await runTask('hexencode', {}, { inputs: [255n] })).toBe('0xff')
    expect(await runTask('hexencode', {}, { inputs: [new Decimal(4096)] })).toBe('0x1000')
    expect(await runTask('hexencode', {}, { inputs: [Uint8Array.of(1, 2)] })).toBe('0x0102')
    await expect(runTask('hexencode', {}, { inputs: [-1n] })).rejects.toThrow('negative')
    await expect(runTask('hexencode', {}, { inputs: [1.5] })).rejects.toThrow(
      'cannot be hex-encoded',
    )
  })
})
