import { describe as group, expect, it } from 'vitest'
import { Decimal } from '../../../src/reduce/index.ts'
import { runTask, taskFailure } from '../support/task.ts'

/**
 * Edges of the arithmetic tasks: how median/mean/mode/sum gather their values (through mean), the
 * attribute each refusal names, and divide's rounding to any precision an int32 allows.
 */
const text = (value: unknown): string => (value as Decimal).toFixed()

group('gathering the values of an aggregate', () => {
  it('refuses values that are not a list', async () => {
    const error = await taskFailure(runTask('mean', { values: '$(x)' }, { vars: { x: { a: 1 } } }))
    expect(error.message).toBe('values must be a list')
  })

  it('refuses an empty list, or nothing left once the faults are dropped', async () => {
    const empty = await taskFailure(runTask('mean', { values: '[]' }))
    expect(empty.message).toBe('no values to aggregate')
    const allFailed = runTask('mean', { allowedFaults: '1' }, { failedInputs: ['down'] })
    expect((await taskFailure(allFailed)).message).toBe('no values to aggregate')
  })

  it('allows all but one value to fail by default', async () => {
    expect(text(await runTask('mean', {}, { inputs: [4], failedInputs: ['down', 'down'] }))).toBe(
      '4',
    )
    const error = await taskFailure(runTask('mean', {}, { failedInputs: ['down', 'down'] }))
    expect(error.message).toBe('2 of 2 values failed, more than allowedFaults 1')
  })

  it('reads a blank allowedFaults as not given', async () => {
    const result = await runTask(
      'mean',
      { allowedFaults: '  ' },
      { inputs: [4], failedInputs: ['down'] },
    )
    expect(text(result)).toBe('4')
  })

  it('names allowedFaults when it is not a whole number', async () => {
    const error = await taskFailure(runTask('mean', { allowedFaults: 'x' }, { inputs: [4] }))
    expect(error.message).toBe('allowedFaults must be a non-negative integer, got "x"')
  })

  it('names the entry of values that is not a number', async () => {
    const error = await taskFailure(runTask('mean', { values: '[1, "x"]' }))
    expect(error.message).toBe('values[1]: not a number: "x"')
  })
})

group('the attribute each arithmetic refusal names', () => {
  it('names mean and divide precision given as a variable that is not whole', async () => {
    const vars = { p: 1.5 }
    const mean = await taskFailure(runTask('mean', { values: '[1]', precision: '$(p)' }, { vars }))
    expect(mean.message).toBe('precision must be a whole number (int32), got 1.5')
    const divide = runTask('divide', { input: '1', divisor: '2', precision: '$(p)' }, { vars })
    expect((await taskFailure(divide)).message).toBe(
      'precision must be a whole number (int32), got 1.5',
    )
  })

  it('names the divisor and the right side when a variable is not a number', async () => {
    const vars = { x: 'abc' }
    const divide = await taskFailure(runTask('divide', { input: '1', divisor: '$(x)' }, { vars }))
    expect(divide.message).toBe('divisor: not a number: "abc"')
    const lessthan = await taskFailure(runTask('lessthan', { left: '1', right: '$(x)' }, { vars }))
    expect(lessthan.message).toBe('right: not a number: "abc"')
  })
})

group('rounding to a precision', () => {
  it('gives the exact quotient for a precision beyond what decimal.js rounds to', async () => {
    const third = new Decimal(1).dividedBy(3).toFixed()
    expect(
      text(await runTask('divide', { input: '1', divisor: '3', precision: '2000000000' })),
    ).toBe(third)
    expect(text(await runTask('mean', { values: '[0, 1, 0]', precision: '2147483647' }))).toBe(
      third,
    )
  })

  it('rounds to tens as far as int32 goes the other way', async () => {
    const result = await runTask('divide', { input: '7', divisor: '2', precision: '-2000000000' })
    expect(text(result)).toBe('0')
    expect(text(await runTask('divide', { input: '150', divisor: '1', precision: '-2' }))).toBe(
      '200',
    )
  })
})
