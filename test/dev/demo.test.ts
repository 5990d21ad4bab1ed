import { describe, expect, it } from 'vitest'
import { matchesExpected, type DemoCase } from '../../src/dev/demo.ts'

/** A case whose value was 24 when it was built and whose feed answers `now` when asked again. */
function weatherCase(now: unknown): { demoCase: DemoCase; asked: () => number } {
  let asked = 0
  const demoCase = {
    params: [],
    expected: 24n,
    expectedNow: async () => {
      asked += 1
      return now
    },
  } as unknown as DemoCase
  return { demoCase, asked: () => asked }
}

describe('matchesExpected', () => {
  it('takes the value of the case as built without asking the feed again', async () => {
    const { demoCase, asked } = weatherCase(23n)
    expect(await matchesExpected(demoCase, 24n)).toBe(true)
    expect(asked()).toBe(0)
  })

  it('takes the value the feed answers now (a request fetched after the hour turned), and nothing else', async () => {
    const { demoCase } = weatherCase(23n)
    expect(await matchesExpected(demoCase, 23n)).toBe(true)
    expect(await matchesExpected(demoCase, 22n)).toBe(false)
    expect(await matchesExpected(demoCase, undefined)).toBe(false)
  })
})
