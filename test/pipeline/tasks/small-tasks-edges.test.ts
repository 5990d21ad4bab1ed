import { describe as group, expect, it } from 'vitest'
import { DEFAULT_PIPELINE_LIMITS } from '../../../src/pipeline/limits.ts'
import { createTaskRun, type RunContext } from '../../../src/pipeline/index.ts'
import { responseCap } from '../../../src/pipeline/tasks/response-cap.ts'
import { Decimal } from '../../../src/reduce/index.ts'
import { failureOf, runTask, taskFailure } from '../support/task.ts'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

/**
 * Edges of four small pieces: mode's text comparison of every kind of value, hexencode's refusals
 * and large whole numbers, memo's input rules, and the response cap a spec may set.
 */
group('mode compares values by their text form', () => {
  it('counts distinct objects apart and lists them in order', async () => {
    const result = await runTask('mode', { values: '[{"a":1},{"b":2},{"a":1}]' })
    expect(result).toEqual({ results: [{ a: 1 }], occurrences: 2 })
    expect(await runTask('mode', {}, { inputs: [{ a: 1 }, { b: 2 }] })).toEqual({
      results: [{ a: 1 }, { b: 2 }],
      occurrences: 1,
    })
  })

  it('tells NaN apart from null', async () => {
    expect(await runTask('mode', {}, { inputs: [Number.NaN, null] })).toEqual({
      results: [Number.NaN, null],
      occurrences: 1,
    })
  })

  it('treats a decimal, bytes and text of the same number as one value', async () => {
    const decimal = new Decimal(2)
    const two = bytes('2')
    expect(await runTask('mode', {}, { inputs: [decimal, '2', two, 1] })).toEqual({
      results: [two],
      occurrences: 3,
    })
    expect(await runTask('mode', {}, { inputs: [true, 'true', 5n, '5', 5n, 'true'] })).toEqual({
      results: [5n, 'true'],
      occurrences: 3,
    })
  })

  it('answers the single value when there is only one', async () => {
    expect(await runTask('mode', {}, { inputs: [bytes('x')] })).toEqual({
      results: [bytes('x')],
      occurrences: 1,
    })
  })
})

group('hexencode edges', () => {
  it('encodes text as UTF-8 and bytes as they are', async () => {
    expect(await runTask('hexencode', {}, { inputs: ['é1'] })).toBe('0xc3a931')
    expect(await runTask('hexencode', {}, { inputs: [Uint8Array.of(0, 255)] })).toBe('0x00ff')
  })

  it('encodes whole numbers beyond the safe range exactly', async () => {
    const big = (10n ** 30n).toString(16)
    expect(await runTask('hexencode', {}, { inputs: [1e21] })).toBe(
      '0x' + (10n ** 21n).toString(16),
    )
    expect(await runTask('hexencode', {}, { inputs: [new Decimal('1e30')] })).toBe('0x' + big)
    expect(await runTask('hexencode', {}, { inputs: [new Decimal(255)] })).toBe('0xff')
    expect(await runTask('hexencode', {}, { inputs: [new Decimal('1e1000')] })).toBe(
      '0x' + (10n ** 1000n).toString(16),
    )
  })

  it('refuses booleans, null and non-finite numbers as values it cannot encode', async () => {
    const flag = await taskFailure(runTask('hexencode', {}, { inputs: [true] }))
    expect(flag.message).toBe('input cannot be hex-encoded: true')
    const empty = await taskFailure(runTask('hexencode', {}, { inputs: [null] }))
    expect(empty.message).toBe('input cannot be hex-encoded: null')
    const nan = await taskFailure(runTask('hexencode', {}, { inputs: [Number.NaN] }))
    expect(nan.message).toBe('input cannot be hex-encoded: NaN')
  })
})

group('memo edges', () => {
  it('refuses more than one input', async () => {
    const error = await taskFailure(runTask('memo', { value: '1' }, { inputs: [1, 2] }))
    expect(error.message).toBe('task inputs: memo takes at most one input, got 2')
  })

  it('reads the input when value is blank', async () => {
    const result = await runTask('memo', { value: '  ' }, { inputs: [5] })
    expect(result).toBeInstanceOf(Decimal)
    expect((result as Decimal).toFixed()).toBe('5')
  })

  it('names value when there is neither value nor input', async () => {
    const error = await taskFailure(runTask('memo', {}))
    expect(error.message).toBe('value: not given and the task has no input')
  })

  it('turns a bigint input into a decimal', async () => {
    const result = await runTask('memo', {}, { inputs: [10n ** 20n] })
    expect(result).toBeInstanceOf(Decimal)
    expect((result as Decimal).toFixed()).toBe(`1${'0'.repeat(20)}`)
  })
})

function capOf(
  type: 'http' | 'bridge',
  attributes: Record<string, string>,
  context: Partial<RunContext> = {},
) {
  const task = createTaskRun({
    id: 'task',
    type,
    attributes: { type, ...attributes },
    inputs: [],
    vars: {},
    context: { runId: 'test', env: {}, ...context },
    signal: AbortSignal.timeout(10_000),
  })
  return responseCap(task, type)
}

group('response cap', () => {
  it('takes a written number, spaces around it allowed', () => {
    expect(capOf('http', { maxResponseBytes: ' 100 ' })).toEqual({
      maxBytes: 100,
      source: `the task's maxResponseBytes`,
    })
  })

  it('uses each type its own setting when nothing is written', () => {
    const limits = {
      ...DEFAULT_PIPELINE_LIMITS,
      httpMaxResponseBytes: 111,
      bridgeMaxResponseBytes: 222,
    }
    expect(capOf('bridge', { maxResponseBytes: '' }, { limits })).toEqual({
      maxBytes: 222,
      source: 'BRIDGE_MAX_RESPONSE_BYTES',
    })
    expect(capOf('http', { maxResponseBytes: '  ' }, { limits })).toEqual({
      maxBytes: 111,
      source: 'HTTP_TASK_MAX_RESPONSE_BYTES',
    })
    expect(capOf('bridge', {})).toEqual({
      maxBytes: DEFAULT_PIPELINE_LIMITS.bridgeMaxResponseBytes,
      source: 'BRIDGE_MAX_RESPONSE_BYTES',
    })
  })

  it('refuses anything but a whole number, as a config error quoting at most 40 characters', async () => {
    for (const written of ['x100', '100x', '0', '$(cap)']) {
      const error = await failureOf(
        Promise.resolve().then(() => capOf('http', { maxResponseBytes: written })),
      )
      expect(error.message).toBe(
        `maxResponseBytes must be a whole number of bytes written in the spec, got ${JSON.stringify(written)}`,
      )
      expect(error.kind).toBe('config')
    }
    const long = `1${'x'.repeat(60)}`
    const error = await failureOf(
      Promise.resolve().then(() => capOf('bridge', { maxResponseBytes: long })),
    )
    expect(error.message).toBe(
      `maxResponseBytes must be a whole number of bytes written in the spec, got ${JSON.stringify(long.slice(0, 40))}`,
    )
  })
})
