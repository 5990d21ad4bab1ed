import { describe, expect, it } from 'vitest'
import { routeLibraryWarnings } from '../../src/config/library-warnings.ts'

describe('routeLibraryWarnings', () => {
  it('logs each distinct console.warn text once, formatted, and puts console.warn back', () => {
    const printed: unknown[][] = []
    const target = { warn: (...args: unknown[]) => void printed.push(args) }
    const logged: Array<{ fields: Record<string, unknown>; message: string }> = []
    const restore = routeLibraryWarnings(
      { warn: (fields, message) => void logged.push({ fields, message }) },
      target,
    )
    for (let connection = 0; connection < 32; connection++)
      target.warn('IMPORTANT! Eviction policy is %s. It should be "noeviction"', 'allkeys-lru')
    target.warn('another warning', 42)
    expect(logged).toEqual([
      {
        fields: { from: 'library' },
        message: 'IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"',
      },
      { fields: { from: 'library' }, message: 'another warning 42' },
    ])
    expect(printed).toEqual([])
    restore()
    target.warn('after')
    expect(printed).toEqual([['after']])
    expect(logged).toHaveLength(2)
  })
})
