import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseJsonLossless } from '../../src/pipeline/json.ts'
import { jsonWithVarExpressions } from '../../src/pipeline/vars.ts'
import { Decimal } from '../../src/reduce/index.ts'
import { runTask } from './support/task.ts'

describe('parseJsonLossless', () => {
  it('keeps big integers and long decimals exact', () => {
    const parsed = parseJsonLossless(
      '{"wei": 1234567890123456789012, "small": 12, "price": 0.12345678901234567890, "neg": -9007199254740993, "s": "12345678901234567890"}',
    ) as Record<string, unknown>
    expect(parsed.wei).toBe(1234567890123456789012n)
    expect(parsed.small).toBe(12)
    expect((parsed.price as Decimal).toFixed()).toBe('0.1234567890123456789')
    expect(parsed.neg).toBe(-9007199254740993n)
    expect(parsed.s).toBe('12345678901234567890')
  })
  it('agrees with JSON.parse, up to the exact types it adds', () => {
    const asNumbers = (value: unknown): unknown => {
      if (typeof value === 'bigint' || Decimal.isDecimal(value)) return Number(value.toString())
      if (Array.isArray(value)) return value.map(asNumbers)
      if (value !== null && typeof value === 'object')
        return Object.fromEntries(
          Object.entries(value).map(([key, item]) => [key, asNumbers(item)]),
        )
      return value
    }
    fc.assert(
      fc.property(fc.json(), (text) => {
        const padded = `{"pad": "1234567890123456789", "v": ${text}}`
        expect(asNumbers(parseJsonLossless(padded))).toEqual(JSON.parse(padded))
      }),
      { numRuns: 300 },
    )
  })
  it('refuses what JSON.parse refuses', () => {
    for (const text of [
      '{"a": 12345678901234567890',
      '[1,]',
      '{"a" 1}',
      '01234567890123456789',
      '"\\u12"',
    ])
      expect(() => parseJsonLossless(text)).toThrow(SyntaxError)
  })
  it('feeds jsonparse and multiply without losing digits', async () => {
    const value = await runTask(
      'jsonparse',
      { path: 'result' },
      { inputs: ['{"result": 123456789012345678901234567890}'] },
    )
    expect(value).toBe(123456789012345678901234567890n)
  })
})

describe('a JSON attribute with variables, read run after run', () => {
  it('gives each run its own values, and what one run does to its value reaches no other', () => {
    const text = '{"id": $(jobRun.id), "list": [$(jobRun.id), {"n": 1}]}'
    const first = jsonWithVarExpressions(text, { jobRun: { id: 1 } }) as {
      id: number
      list: [number, { n: number }]
    }
    first.list[1].n = 99
    first.list.push(7 as never)
    expect(jsonWithVarExpressions(text, { jobRun: { id: 2 } })).toEqual({
      id: 2,
      list: [2, { n: 1 }],
    })
    expect(() => jsonWithVarExpressions('{"id": $(jobRun.id)', {})).toThrow(/not valid JSON/)
    expect(() => jsonWithVarExpressions('{"id": $(jobRun.id)', {})).toThrow(/not valid JSON/)
  })
})
