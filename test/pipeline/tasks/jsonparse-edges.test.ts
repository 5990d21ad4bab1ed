import { describe, expect, it } from 'vitest'
import { DecodeBudgetError } from '../../../src/net/decode-budget.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../../src/pipeline/limits.ts'
import { TaskError } from '../../../src/pipeline/index.ts'
import { ReduceError } from '../../../src/reduce/index.ts'
import { runTask, failureOf as failure } from '../support/task.ts'

/**
 * jsonparse at its edges: data that is already a value (or bytes, or not JSON at all), the text
 * length and depth bounds and how their errors read, a path that is a list, and what
 * allowJSONPath may say.
 */
const body = JSON.stringify({ data: { result: 144, items: [1, 2, 3] } })
const MAX_JSON_TEXT = 10 * 1024 * 1024

describe('jsonparse: what the data may be', () => {
  it('reads a value a previous task gave (an object or an array) as the document', async () => {
    expect(
      await runTask('jsonparse', { path: 'data,result' }, { inputs: [{ data: { result: 3 } }] }),
    ).toBe(3)
    expect(await runTask('jsonparse', { path: '1' }, { inputs: [[7, 8]] })).toBe(8)
  })

  it('reads bytes as UTF-8 JSON text', async () => {
    const bytes = new TextEncoder().encode(body)
    expect(await runTask('jsonparse', { path: 'data,result' }, { inputs: [bytes] })).toBe(144)
  })

  it('refuses null, numbers and booleans, naming what it got', async () => {
    for (const [value, got] of [
      [null, 'null'],
      [5, 'number'],
      [true, 'boolean'],
    ] as const) {
      const error = await failure(runTask('jsonparse', { path: 'data' }, { inputs: [value] }))
      expect(error).toBeInstanceOf(TaskError)
      expect(error.message).toBe(`data must be JSON text, got ${got}`)
      expect(error.kind).toBe('bad_input')
    }
  })

  it('refuses text that is not JSON with the parser reason, and no depth bound', async () => {
    const error = await failure(runTask('jsonparse', {}, { inputs: ['nesting deeper'] }))
    expect(error.message).toBe(
      `data is not JSON: Unexpected token 'e', "nesting deeper" is not valid JSON`,
    )
    expect(error.bound).toBeUndefined()
  })
})

describe('jsonparse: bounds', () => {
  it('reads 10 MiB of text and refuses one character more, saying the bound', async () => {
    const text = (length: number) => `${' '.repeat(length - 1)}7`
    expect(await runTask('jsonparse', {}, { inputs: [text(MAX_JSON_TEXT)] })).toBe(7)
    const error = await failure(runTask('jsonparse', {}, { inputs: [text(MAX_JSON_TEXT + 1)] }))
    expect(error).toBeInstanceOf(TaskError)
    expect(error.message).toBe('data is longer than 10485760 characters')
    expect(error.kind).toBe('bad_input')
  })

  it('names JSON_MAX_DEPTH when the text nests too deep', async () => {
    const limits = { ...DEFAULT_PIPELINE_LIMITS, jsonMaxDepth: 2 }
    const error = await failure(
      runTask('jsonparse', {}, { inputs: ['[[[[1]]]]'], context: { limits } }),
    )
    expect(error.message).toBe(
      'data is not JSON: nesting deeper than 2 at position 2 (JSON_MAX_DEPTH)',
    )
    expect(error.bound).toBe('JSON_MAX_DEPTH')
    expect(error.kind).toBe('bad_input')
  })

  it('refuses more values than DECODE_MAX_NODES, the budget error as its cause', async () => {
    const limits = { ...DEFAULT_PIPELINE_LIMITS, decodeMaxNodes: 2 }
    const error = await failure(
      runTask('jsonparse', {}, { inputs: ['[1,2,3,4]'], context: { limits } }),
    )
    expect(error).toBeInstanceOf(TaskError)
    expect(error.message).toBe(
      'data (JSON) would build more than 2 values (DECODE_MAX_NODES); it was refused before they were built',
    )
    expect(error.cause).toBeInstanceOf(DecodeBudgetError)
  })
})

describe('jsonparse: paths', () => {
  it('joins a path given as a list with commas', async () => {
    const vars = { p: ['data', 'result'] }
    expect(await runTask('jsonparse', { path: '$(p)' }, { inputs: [body], vars })).toBe(144)
  })

  it("fails a path that does not fit as the task's error, the path error its cause", async () => {
    const error = await failure(
      runTask('jsonparse', { path: 'data,result,x', lax: 'true' }, { inputs: [body] }),
    )
    expect(error).toBeInstanceOf(TaskError)
    expect(error.message).toBe(
      'path data,result,x: no value at "data.result.x" (a number has no fields)',
    )
    expect(error.kind).toBe('bad_input')
    expect(error.cause).toBeInstanceOf(ReduceError)
    const missing = await failure(runTask('jsonparse', { path: 'data,nope' }, { inputs: [body] }))
    expect(missing).toBeInstanceOf(TaskError)
    expect(missing.cause).toBeInstanceOf(ReduceError)
    expect(await runTask('jsonparse', { path: 'data,nope', lax: 'true' }, { inputs: [body] })).toBe(
      null,
    )
  })
})

describe('jsonparse: allowJSONPath', () => {
  it('empty or only spaces is as if not written', async () => {
    for (const allowJSONPath of ['', '  '])
      expect(
        await runTask('jsonparse', { path: '$.data.result', allowJSONPath }, { inputs: [body] }),
      ).toBe(144)
  })

  it('reads true with spaces around it', async () => {
    expect(
      await runTask(
        'jsonparse',
        { path: '$(p)', allowJSONPath: ' true ' },
        { inputs: [body], vars: { p: '$.data.items[1]' } },
      ),
    ).toBe(2)
  })

  it('refuses anything but true or false as a config error, quoting 40 characters', async () => {
    const written = 'maybe' + 'x'.repeat(60)
    const error = await failure(
      runTask('jsonparse', { path: '$.data.result', allowJSONPath: written }, { inputs: [body] }),
    )
    expect(error).toBeInstanceOf(TaskError)
    expect(error.message).toBe(
      `allowJSONPath must be true or false written in the spec, got "${written.slice(0, 40)}"`,
    )
    expect(error.kind).toBe('config')
  })
})
