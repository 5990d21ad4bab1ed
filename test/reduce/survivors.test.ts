import { describe, expect, it } from 'vitest'
import {
  aliasResolver,
  castValue,
  evaluatePath,
  parseSimpleJsonPath,
  PathBudget,
  toDecimal,
  withAliasTwins,
} from '../../src/reduce/index.ts'
import { takeValues } from '../../src/reduce/path-budget.ts'

// What the survivors of the reduce mutation run could not be told apart by: each case here is an
// input on which src/reduce answers differently from one of them (docs/reliability.md).

function failure(run: () => unknown): Error & { code?: string } {
  try {
    run()
  } catch (error) {
    if (error instanceof Error) return error
    throw error
  }
  throw new Error('expected an error')
}

/** `inner` inside `levels` levels of `wrap`. */
function nest(inner: unknown, levels: number, wrap: (value: unknown) => unknown): unknown {
  let value = inner
  for (let level = 0; level < levels; level++) value = wrap(value)
  return value
}

describe('alias twins at the depth bound', () => {
  const resolve = aliasResolver({ a: ['b'] })

  it('still adds the twins of an object at level 64, the last level copied', () => {
    const leaf = { a: 1 }
    let copy = withAliasTwins(
      nest(leaf, 64, (value) => ({ n: value })),
      resolve,
    )
    for (let level = 0; level < 64; level++) copy = (copy as { n: unknown }).n
    expect(copy).toEqual({ a: 1, b: 1 })
    expect(copy).not.toBe(leaf)
  })

  it('counts levels of arrays too: past 64 nested arrays the value is the original', () => {
    const leaf = { a: 1 }
    let copy = withAliasTwins(
      nest(leaf, 70, (value) => [value]),
      resolve,
    )
    for (let level = 0; level < 70; level++) copy = (copy as unknown[])[0]
    expect(copy).toBe(leaf)
    expect(copy).toEqual({ a: 1 })
  })
})

describe('32 bytes and addresses: the whole text is the hex, or it is not', () => {
  const hex64 = 'ab'.repeat(32)

  it('bytes32 reads hex with anything before or after it as text, too long', () => {
    for (const text of [`x0x${hex64}`, `0x${hex64}z`])
      expect(failure(() => castValue(text, 'bytes32')).message, text).toBe(
        `"${text.slice(0, 64)}... (67 characters)" is 67 bytes, more than bytes32 holds`,
      )
  })

  it('address refuses what is not 20 bytes of hex as not an address, not as a bad checksum', () => {
    const said = (value: unknown) => failure(() => castValue(value, 'address')).message
    expect(said(`x0x${'a'.repeat(40)}`)).toBe(`cannot cast "x0x${'a'.repeat(40)}" to address`)
    expect(said(`0x${'a'.repeat(41)}`)).toBe(`cannot cast "0x${'a'.repeat(41)}" to address`)
    expect(said('hello')).toBe('cannot cast "hello" to address')
    // An array whose text is an address is still an array.
    expect(said([`0x${'a'.repeat(40)}`])).toBe('cannot cast an array to address')
    expect(castValue(`0x${'a'.repeat(40)}`, 'address')).toBe(
      '0xaAaAaAaaAaAaAaaAaAAAAAAAAaaaAaAaAaaAaaAa',
    )
  })
})

describe('decimal text', () => {
  it('reads a fraction without a leading zero, of any length', () => {
    expect(toDecimal('.25')?.toFixed()).toBe('0.25')
    expect(toDecimal('-.125e2')?.toFixed()).toBe('-12.5')
    expect(castValue('.25', 'uint256', { times: 100 })).toBe(25n)
  })
})

describe('simple paths: every piece starts where the last one ended', () => {
  it('leaves a name that does not start the segment to JSONPath', () => {
    const path = "$.1['a']"
    expect(parseSimpleJsonPath(path)).toBeUndefined()
    expect(evaluatePath({ 1: { a: 'one' }, a: { a: 'wrong' } }, path)).toBe('one')
  })

  it('leaves an index after a recursive descent to JSONPath', () => {
    expect(parseSimpleJsonPath('$..a[0]')).toBeUndefined()
    expect(evaluatePath({ a: ['deep'], 0: ['simple'] }, '$..a[0]')).toBe('deep')
  })

  it('leaves a quoted name after a recursive descent to JSONPath', () => {
    const path = "$..abc['a']"
    expect(parseSimpleJsonPath(path)).toBeUndefined()
    expect(evaluatePath({ abc: { a: 'deep' }, a: { a: 'simple' } }, path)).toBe('deep')
  })
})

describe('general JSONPath', () => {
  it('gives a matched array as itself, whatever its length, and a matched number', () => {
    expect(evaluatePath({ a: [7] }, '$[a]')).toEqual([7])
    expect(evaluatePath({ a: [] }, '$[a,b]')).toEqual([])
    expect(evaluatePath({ a: 5 }, '$[a]')).toBe(5)
  })

  it('never runs a script a path carries: filters and computed names are refused', () => {
    for (const path of ['$.a[?(@ > 0)]', '$.a[(@.length-1)]']) {
      const error = failure(() => evaluatePath({ a: [1, 0, 2] }, path))
      expect(error.code, path).toBe('BAD_PATH')
      expect(error.message, path).toContain('prevented in JSONPath expression')
    }
  })

  it('finds nothing in a document that is 0, false, an empty string or null', () => {
    for (const document of [0, false, '', null]) {
      const error = failure(() => evaluatePath(document, '$..a'))
      expect([error.code, error.message]).toEqual(['NO_VALUE', 'path $..a: no value'])
    }
  })

  it('leaves out matches that hold no value', () => {
    expect(evaluatePath({ a: undefined, b: 1 }, '$.*')).toBe(1)
    expect(evaluatePath({ a: undefined, b: 1, c: 2 }, '$.*')).toEqual([1, 2])
    expect(failure(() => evaluatePath({ a: undefined }, '$.*')).code).toBe('NO_VALUE')
  })
})

describe('the budget counts what a general path does', () => {
  it('counts each child a recursive descent walks, numbers included', () => {
    const document = { a: Array<number>(1_000).fill(1), x: 1 }
    expect(failure(() => evaluatePath(document, '$..x', { maxValues: 500 })).code).toBe(
      'OVER_BUDGET',
    )
    expect(evaluatePath(document, '$..x', { maxValues: 2_000 })).toBe(1)
  })

  it('does not count the values of a single match, which is not copied', () => {
    const document = { a: Array<number>(200).fill(0) }
    expect(evaluatePath(document, '$[a,b]', { maxValues: 50 })).toHaveLength(200)
    expect(failure(() => evaluatePath(document, '$[a,a]', { maxValues: 50 })).code).toBe(
      'OVER_BUDGET',
    )
  })

  it('counts every slot of a sparse array, as what comes next reads each', () => {
    const budget = new PathBudget(1_000, '$')
    takeValues(new Array(50), budget)
    expect(budget.count).toBe(51)
    const holes = { a: new Array(50) }
    expect(failure(() => evaluatePath(holes, '$[a,a]', { maxValues: 60 })).code).toBe('OVER_BUDGET')
  })

  it('counts the copy that adds alias twins', () => {
    const document = { list: Array.from({ length: 200 }, () => ({})), x: 1 }
    const aliases = { x: ['z'] }
    expect(failure(() => evaluatePath(document, '$[x,y]', { maxValues: 100, aliases })).code).toBe(
      'OVER_BUDGET',
    )
    expect(evaluatePath(document, '$[x,y]', { maxValues: 100 })).toBe(1)
    expect(evaluatePath(document, '$[z,y]', { maxValues: 300, aliases })).toBe(1)
  })

  it('counts a match of 130,000 entries one by one: over the budget, or within a raised one', () => {
    const document = { a: Array<number>(130_000).fill(0) }
    expect(failure(() => evaluatePath(document, '$[a,a]')).code).toBe('OVER_BUDGET')
    expect(evaluatePath(document, '$[a,a]', { maxValues: 300_000 })).toHaveLength(2)
  })
})
