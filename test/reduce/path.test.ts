import { describe, expect, it } from 'vitest'
import { evaluatePath, ReduceError } from '../../src/reduce/index.ts'

const doc = {
  data: {
    x: 1.44,
    nothing: null,
    windgust: 31.7,
    items: [10, 20, 30],
    nested: { 'a.b': 'dotted', list: [{ name: 'first' }, { name: 'last' }] },
  },
}
const aliases = { windGust: ['windgust'], goalkeeperGoalAgainst: ['goalkeeperGoalsAgainst'] }

function failure(run: () => unknown): ReduceError {
  try {
    run()
  } catch (error) {
    if (error instanceof ReduceError) return error
    throw error
  }
  throw new Error('expected a ReduceError')
}

describe('evaluatePath', () => {
  it('reads the same value in all three notations', () => {
    expect(evaluatePath(doc, '$.data.x')).toBe(1.44)
    expect(evaluatePath(doc, "$.data['x']")).toBe(1.44)
    expect(evaluatePath(doc, 'data.x')).toBe(1.44)
    expect(evaluatePath(doc, 'data,x')).toBe(1.44)
    expect(evaluatePath(doc, 'data|x', { separator: '|' })).toBe(1.44)
  })

  it('returns null as a value and the whole document for an empty path', () => {
    expect(evaluatePath(doc, '$.data.nothing')).toBeNull()
    expect(evaluatePath(doc, '')).toBe(doc)
    expect(evaluatePath(doc, '$')).toBe(doc)
  })

  it('indexes arrays, negative indices from the end', () => {
    expect(evaluatePath(doc, 'data.items.0')).toBe(10)
    expect(evaluatePath(doc, 'data,items,-1')).toBe(30)
    expect(evaluatePath(doc, 'data.items.-3')).toBe(10)
    expect(evaluatePath(doc, '$.data.items[-1]')).toBe(30)
    expect(evaluatePath(doc, '$.data.items[1]')).toBe(20)
    expect(evaluatePath(doc, '$.data.nested.list[-1].name')).toBe('last')
    // A slice is a general JSONPath: one match is that value itself.
    expect(evaluatePath(doc, '$.data.items[-1:]')).toBe(30)
    expect(evaluatePath(doc, '$.data.items[-2:]')).toEqual([20, 30])
    expect(evaluatePath(doc, '$.data.items[*]')).toEqual([10, 20, 30])
    expect(evaluatePath(doc, '$.data.items')).toEqual([10, 20, 30])
  })

  it('reports an out-of-range or non-integer index with the path', () => {
    expect(failure(() => evaluatePath(doc, 'data.items.3')).message).toBe(
      'path data.items.3: no value at "data.items.3" (index 3 out of range, length 3)',
    )
    expect(failure(() => evaluatePath(doc, 'data.items.-4')).code).toBe('NO_VALUE')
    expect(failure(() => evaluatePath(doc, 'data.items.first')).message).toContain('integer index')
    expect(failure(() => evaluatePath(doc, 'data.items.first')).code).toBe('WRONG_SHAPE')
    expect(failure(() => evaluatePath(doc, 'data.x.y')).code).toBe('WRONG_SHAPE')
  })

  it('escapes the separator with a backslash', () => {
    expect(evaluatePath(doc, 'data.nested.a\\.b')).toBe('dotted')
    expect(evaluatePath(doc, "$.data.nested['a.b']")).toBe('dotted')
  })

  it('says which path had no value', () => {
    const error = failure(() => evaluatePath(doc, '$.data.y'))
    expect(error.code).toBe('NO_VALUE')
    expect(error.path).toBe('$.data.y')
    expect(error.message).toBe('path $.data.y: no value at "data.y"')
    expect(failure(() => evaluatePath(doc, '$..missing')).message).toBe('path $..missing: no value')
    expect(failure(() => evaluatePath(doc, 'data.x.deeper')).message).toContain(
      'a number has no fields',
    )
  })

  it('resolves aliases in both directions, with a map or a function', () => {
    expect(evaluatePath(doc, '$.data.windGust', { aliases })).toBe(31.7)
    expect(evaluatePath(doc, 'data,windGust', { aliases })).toBe(31.7)
    expect(evaluatePath({ data: { windGust: 5 } }, 'data.windgust', { aliases })).toBe(5)
    expect(
      evaluatePath({ g: 2 }, 'goalkeeperGoalAgainst', {
        aliases: (name) => (name === 'goalkeeperGoalAgainst' ? ['g'] : []),
      }),
    ).toBe(2)
    // General JSONPath expressions see the alias twins too.
    expect(
      evaluatePath({ list: [{ windgust: 1 }, { windGust: 2 }] }, '$.list[*].windGust', { aliases }),
    ).toEqual([1, 2])
    // Without aliases nothing is guessed.
    expect(failure(() => evaluatePath(doc, '$.data.windGust')).code).toBe('NO_VALUE')
  })

  it('prefers the exact key over an alias', () => {
    expect(evaluatePath({ windGust: 1, windgust: 2 }, 'windgust', { aliases })).toBe(2)
    expect(evaluatePath({ windGust: 1, windgust: 2 }, 'windGust', { aliases })).toBe(1)
  })

  it('refuses script expressions and malformed JSONPath', () => {
    expect(failure(() => evaluatePath(doc, '$.data.items[?(@>1)]')).code).toBe('BAD_PATH')
    expect(failure(() => evaluatePath(doc, 'x'.repeat(2000))).code).toBe('BAD_PATH')
  })

  it('does not walk into inherited properties', () => {
    expect(failure(() => evaluatePath({}, 'constructor')).code).toBe('NO_VALUE')
    expect(failure(() => evaluatePath({}, '$.__proto__')).code).toBe('NO_VALUE')
  })
})
