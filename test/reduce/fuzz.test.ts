import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  castValue,
  evaluatePath,
  reduce,
  ReduceError,
  VALUE_TYPES,
} from '../../src/reduce/index.ts'

// Paths, types and times come from untrusted requests: every failure must be a ReduceError.
const doc = { data: { a: [1, { b: 'x' }], windgust: 3, n: null, s: '12.5' } }
const aliases = { windGust: ['windgust'] }

function onlyReduceErrors(run: () => unknown): void {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(ReduceError)
  }
}

describe('reduce under hostile input', () => {
  it('random paths in every notation', () => {
    const path = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.string({ maxLength: 60 }).map((text) => `$${text}`),
      fc.constantFrom(
        '$..*',
        '$[*][*]',
        '$.data.a[-1:]',
        'data,a,-1,b',
        '$["data"]',
        "$['data']['a'][1]",
      ),
    )
    fc.assert(
      fc.property(
        path,
        fc.option(fc.string({ maxLength: 3 }), { nil: undefined }),
        (text, separator) => {
          onlyReduceErrors(() => evaluatePath(doc, text, { aliases, separator }))
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('random values, types and times', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.jsonValue(), fc.bigInt(), fc.string()),
        fc.constantFrom(...VALUE_TYPES, 'uint8', ''),
        fc.option(fc.oneof(fc.string({ maxLength: 30 }), fc.double(), fc.integer()), {
          nil: undefined,
        }),
        (value, type, times) => {
          onlyReduceErrors(() => castValue(value, type, { times }))
          onlyReduceErrors(() => reduce({ data: { v: value } }, { path: 'data.v', type, times }))
        },
      ),
      { numRuns: 2000 },
    )
  })
})
