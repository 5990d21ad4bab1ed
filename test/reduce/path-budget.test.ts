import { JSONPath } from 'jsonpath-plus'
import { describe, expect, it } from 'vitest'
import { evaluatePath, reduce, ReduceError } from '../../src/reduce/index.ts'

/**
 * Paths that multiply: what a path does is bounded by PATH_MAX_VALUES, not only what it says by its
 * length. Each case here ran without end (or built millions of values) before the budget.
 */

/** The document: 60 levels, each with a few fields (about 27 kB of JSON). */
function deepDocument(levels = 60): unknown {
  let document: unknown = 1
  for (let level = 0; level < levels; level++)
    document = { a: document, b: [level, level], c: 'x'.repeat(400), d: { e: level } }
  return document
}

function failure(run: () => unknown): ReduceError {
  try {
    run()
  } catch (error) {
    if (error instanceof ReduceError) return error
    throw error
  }
  throw new Error('expected a ReduceError')
}

describe('a path evaluation under PATH_MAX_VALUES', () => {
  it('stops `$` and forty `..*` over a 60-level document, naming the setting', () => {
    const error = failure(() => evaluatePath(deepDocument(), '$' + '..*'.repeat(40)))
    expect(error.code).toBe('OVER_BUDGET')
    expect(error.kind).toBe('bad_input')
    expect(error.message).toContain('more than 100000 values (PATH_MAX_VALUES)')
    expect(error.message).toMatch(/^path \$\.\.\*/)
  })

  it('stops a union that multiplies without reading the document', () => {
    // Each `[$,$,$,$]` goes on four times from the same value: 4^9 = 262,144 branches.
    const path = '$' + '[$,$,$,$]'.repeat(9) + '.x'
    expect(failure(() => evaluatePath({ x: 1 }, path)).code).toBe('OVER_BUDGET')
    // The same over a bare number: nothing to read at all, only steps.
    const overNumber = '$.x' + '[$,$,$,$]'.repeat(9) + '.y'
    expect(failure(() => evaluatePath({ x: 1 }, overNumber)).code).toBe('OVER_BUDGET')
  })

  it('counts every value of what it returns: one large field returned many times', () => {
    const big = { items: Array.from({ length: 2_000 }, (_, index) => ({ index })) }
    // Each match is the same 4,001-value field; 30 of them is 120,030 values to copy.
    const path = `$[${Array(30).fill('items').join(',')}]`
    expect(failure(() => evaluatePath(big, path)).code).toBe('OVER_BUDGET')
    expect(evaluatePath(big, `$[${Array(20).fill('items').join(',')}]`)).toHaveLength(20)
  })

  it('lets ordinary paths through, and the setting moves the line', () => {
    const document = deepDocument(10)
    expect(evaluatePath(document, '$..e')).toHaveLength(10)
    expect(evaluatePath(document, '$.a.a.d.e')).toBe(7)
    expect(reduce({ data: { x: [1, 2, 3] } }, { path: '$.data.x[*]', maxValues: 50 })).toEqual([
      1, 2, 3,
    ])
    const tight = failure(() => evaluatePath(document, '$..e', { maxValues: 20 }))
    expect(tight.message).toContain('more than 20 values (PATH_MAX_VALUES)')
    expect(failure(() => reduce(document, { path: '$..*', maxValues: 100 })).code).toBe(
      'OVER_BUDGET',
    )
  })

  it('counts key paths by their steps', () => {
    let nested: unknown = 1
    for (let level = 0; level < 200; level++) nested = { a: nested }
    const path = Array(150).fill('a').join(',')
    expect(failure(() => evaluatePath(nested, path, { maxValues: 100 })).code).toBe('OVER_BUDGET')
    expect(evaluatePath(nested, path, { maxValues: 200 })).toBeTypeOf('object')
  })

  it("does not keep requesters' paths in jsonpath-plus's process-wide cache", () => {
    const cache = (JSONPath as unknown as { cache: Record<string, unknown> }).cache
    const path = `$..unusual${Date.now()}[*]`
    expect(() => evaluatePath({ a: 1 }, path)).toThrow('no value')
    expect(Object.hasOwn(cache, path)).toBe(false)
  })
})
