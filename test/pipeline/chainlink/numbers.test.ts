import { describe, expect, it } from 'vitest'
import { Decimal } from '../../../src/reduce/index.ts'
import { toPlain } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'

// Chainlink's cases for multiply, divide, median, mean, sum, mode and jsonparse
// (core/services/pipeline/task.<type>_test.go). Go's int8..uint64 and float32 inputs are all JS
// numbers or bigints here; each case runs through the job DAG (an input), written in the spec, and
// through variables. Numbers stay exact where Chainlink's float64 would round (see docs/job-specs.md).

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

const text = (value: unknown) => String(toPlain(value))

describe('multiply (TestMultiplyTask_Happy / _Unhappy)', () => {
  const inputs: Array<[string, unknown]> = [
    ['string', '1.23'],
    ['int', 2],
    ['bigint', 2n],
    ['float64', 1.23],
    ['decimal', new Decimal('1.23')],
  ]
  const times: Array<[string, string]> = [
    ['by 100', '100'],
    ['negative', '-5'],
    ['no times parameter', '1'],
    ['zero', '0'],
    ['large value', '1000000000000000000'],
  ]
  const cases = inputs.flatMap(([kind, input]) =>
    times.map(([name, by]): [string, unknown, string, string] => [
      `${kind}, ${name}`,
      input,
      by,
      new Decimal(String(input)).times(by).toFixed(),
    ]),
  )
  it.each(cases)('%s', async (_name, input, by, expected) => {
    expect(text(await runTask('multiply', { times: by }, { inputs: [input] }))).toBe(expected)
    expect(text(await runTask('multiply', { input: String(input), times: by }))).toBe(expected)
    expect(
      text(
        await runTask(
          'multiply',
          { input: '$(foo.bar)', times: '$(chain.link)' },
          { vars: { foo: { bar: input }, chain: { link: by } } },
        ),
      ),
    ).toBe(expected)
  })
  it.each<[string, Record<string, string>, unknown[], Record<string, unknown>, string]>([
    ['map as input from inputs', { times: '100' }, [{ chain: 'link' }], {}, 'input'],
    [
      'map as input from var',
      { input: '$(foo)', times: '100' },
      [],
      { foo: { chain: 'link' } },
      'input',
    ],
    ['slice as input from inputs', { times: '100' }, [['chain', 'link']], {}, 'input'],
    ['input as missing var', { input: '$(foo)', times: '100' }, [], {}, 'input'],
    ['times as missing var', { times: '$(foo)' }, ['123'], {}, 'times'],
  ])('%s', async (_name, attributes, inputs, vars, name) => {
    const error = await failure(runTask('multiply', attributes, { inputs, vars }))
    expect(error.message).toMatch(new RegExp(`^${name}`))
    expect(error.retryable).toBe(false)
  })
})

describe('divide (TestDivideTask_Happy / _Unhappy)', () => {
  it.each<[string, unknown, string, string, string]>([
    ['string', '12345.67', '100', '', '123.4567'],
    ['string, negative', '12345.67', '-5', '', '-2469.134'],
    ['string, large value', '12345.67', '1000000000000000000', '', '0.0000000000000123'],
    ['int', 200, '16', '', '12.5'],
    ['int, negative', 200, '-5', '', '-40'],
    ['int, large value', 200, '1000000000000000000', '', '0.0000000000000002'],
    ['int8, large value', 20, '10000000000000000', '', '0.000000000000002'],
    ['float64', 12345.67, '1000', '', '12.34567'],
    ['float64, large value', 12345.67, '1000000000000000000', '', '0.0000000000000123'],
    ['precision', 12345.67, '1000', '2', '12.35'],
    ['precision (> 16)', 200, '6', '18', '33.333333333333333333'],
    ['precision (negative)', 12345.67, '1000', '-1', '10'],
  ])('%s', async (_name, input, divisor, precision, expected) => {
    const attributes = { divisor, ...(precision ? { precision } : {}) }
    expect(text(await runTask('divide', attributes, { inputs: [input] }))).toBe(expected)
    expect(text(await runTask('divide', { input: String(input), ...attributes }))).toBe(expected)
  })
  it.each<[string, Record<string, string>, unknown[], string]>([
    ['map as input from inputs', { divisor: '100' }, [{ chain: 'link' }], 'input'],
    ['divisor as missing var', { divisor: '$(foo)' }, ['123'], 'divisor'],
    ['divide by zero', { divisor: '0' }, ['123'], 'divide by zero'],
  ])('%s', async (_name, attributes, inputs, message) => {
    expect((await failure(runTask('divide', attributes, { inputs }))).message).toContain(message)
  })
})

describe('median, mean, sum, mode (TestMedian, TestMean, TestSum, TestMode)', () => {
  const ok = (value: string) => ({ ok: value })
  const bad = { bad: true } as const
  const run = (
    type: string,
    entries: Array<{ ok: string } | { bad: true }>,
    allowedFaults?: string,
    extra: Record<string, string> = {},
  ) =>
    runTask(
      type,
      { ...(allowedFaults === undefined ? {} : { allowedFaults }), ...extra },
      {
        inputs: entries.flatMap((entry) => ('ok' in entry ? [new Decimal(entry.ok)] : [])),
        failedInputs: entries.flatMap((entry) => ('bad' in entry ? ['uh oh'] : [])),
      },
    )
  it.each<[string, Array<{ ok: string } | { bad: true }>, string, string]>([
    ['odd number of inputs', [ok('1'), ok('2'), ok('3')], '1', '2'],
    ['even number of inputs', [ok('1'), ok('2'), ok('3'), ok('4')], '2', '2.5'],
    ['one input', [ok('1')], '0', '1'],
    ['fewer errors than threshold', [bad, ok('2'), ok('3'), ok('4')], '2', '3'],
    ['exactly threshold of errors', [bad, bad, ok('3'), ok('4')], '2', '3.5'],
  ])('median: %s', async (_name, entries, allowedFaults, expected) => {
    expect(text(await run('median', entries, allowedFaults))).toBe(expected)
  })
  it('median: zero inputs and more errors than allowed fail', async () => {
    await failure(run('median', [], '0'))
    expect((await failure(run('median', [bad, bad, bad, ok('4')], '2'))).message).toContain(
      'more than allowedFaults 2',
    )
  })
  it('mean: 16 places by default, precision rounds half away from zero', async () => {
    expect(text(await run('mean', [ok('1'), ok('2'), ok('2')]))).toBe('1.6666666666666667')
    expect(
      text(await run('mean', [ok('2'), ok('5'), ok('20')], undefined, { precision: '2' })),
    ).toBe('9')
    expect(text(await run('mean', [ok('1.005'), ok('1.005')], undefined, { precision: '2' }))).toBe(
      '1.01',
    )
  })
  it('sum and mode', async () => {
    expect(text(await run('sum', [ok('2'), ok('5'), ok('20'), bad], '1'))).toBe('27')
    // The task reference prints [2, "foo"]; the node's code (task.mode.go) lists ties in the order
    // each reached the top count, which gives ["foo", 2]: the code is what runs.
    const modeOf = await runTask('mode', { values: '[ 2, 5, 2, "foo", "foo", "bar", "foo", 2 ]' })
    expect(toPlain(modeOf)).toEqual({ results: ['foo', 2], occurrences: 3 })
  })
})

describe('jsonparse (TestJSONParseTask)', () => {
  it.each<[string, string, string, string, unknown]>([
    [
      'array index path',
      '{"data":[{"availability":"0.99991"}]}',
      'data,0,availability',
      '',
      '0.99991',
    ],
    ['large int result', '{"some_id":1564679049192120321}', 'some_id', '', '1564679049192120321'],
    ['float result', '{"availability":3.14}', 'availability', '', 3.14],
    ['index array of array', '{"data": [[0, 1]]}', 'data,0,0', '', 0],
    ['index of negative one', '{"data": [0, 1]}', 'data,-1', '', 1],
    [
      'index of negative array length',
      '{"data": [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]}',
      'data,-10',
      '',
      0,
    ],
    ['return array', '{"data": [[0, 1]]}', 'data,0', '', [0, 1]],
    ['return false', '{"data": false}', 'data', '', false],
    [
      'keys in the path have dots',
      '{"Realtime Currency Exchange Rate": {"5. Exchange Rate": "0.00058217"}}',
      'Realtime Currency Exchange Rate,5. Exchange Rate',
      '',
      '0.00058217',
    ],
    [
      'custom separator: keys in the path have commas',
      '{"foo": {"bar1,bar2,bar3": "0.00058217", "bar1": "x"}}',
      'foo.bar1,bar2,bar3',
      '.',
      '0.00058217',
    ],
    [
      'custom separator: diabolical keys',
      '{"a.,/[]{}|<>?_+-=!@#%^&*()": {"foo": "LEND"}}',
      'a.,/[]{}|<>?_+-=!@#%^&*()__hacky__foo',
      '__hacky__',
      'LEND',
    ],
    [
      'empty path',
      '{"data":["stevetoshi sergeymoto"]}',
      '',
      '',
      { data: ['stevetoshi sergeymoto'] },
    ],
  ])('%s', async (_name, data, path, separator, expected) => {
    const result = await runTask(
      'jsonparse',
      { path, ...(separator ? { separator } : {}) },
      { inputs: [data] },
    )
    expect(toPlain(result)).toEqual(expected)
  })
  it.each<[string, string, string, boolean]>([
    [
      'index of negative array length minus one',
      '{"data": [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55]}',
      'data,-12',
      true,
    ],
    ['maximum index array', '{"data": [0, 1]}', 'data,18446744073709551615', true],
    ['overflow index array', '{"data": [0, 1]}', 'data,18446744073709551616', true],
    ['missing top-level key', '{"foo": 1}', 'baz', true],
    ['missing nested key', '{"foo": {}}', 'foo,bar', true],
  ])('%s: null with lax=true, an error without', async (_name, data, path) => {
    expect(await runTask('jsonparse', { path, lax: 'true' }, { inputs: [data] })).toBeNull()
    expect((await failure(runTask('jsonparse', { path }, { inputs: [data] }))).retryable).toBe(
      false,
    )
  })
  it("no data or input, and a malformed 'lax', fail naming the attribute", async () => {
    expect((await failure(runTask('jsonparse', { path: 'a' }))).message).toContain('data')
    expect(
      (await failure(runTask('jsonparse', { path: 'a', lax: 'sergey' }, { inputs: ['{}'] })))
        .message,
    ).toContain('lax')
  })
})
