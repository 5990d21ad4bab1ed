import { describe, expect, it } from 'vitest'
import { routeLibraryOutput, routeLibraryWarnings } from '../../src/config/library-warnings.ts'

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

describe('routeLibraryOutput', () => {
  it('logs what console.log, info and debug print, each text once, and puts them back', () => {
    const printed: unknown[][] = []
    const print = (...args: unknown[]) => void printed.push(args)
    const target = { log: print, info: print, debug: print }
    const logged: Array<{ fields: Record<string, unknown>; message: string }> = []
    const restore = routeLibraryOutput(
      { info: (fields, message) => void logged.push({ fields, message }) },
      target,
    )
    target.log('JsonRpcProvider failed to detect network; retry in %ds', 1)
    target.log('JsonRpcProvider failed to detect network; retry in %ds', 1)
    target.info('an info line')
    target.debug({ a: 1 })
    expect(logged.map((line) => line.message)).toEqual([
      'JsonRpcProvider failed to detect network; retry in 1s',
      'an info line',
      '{ a: 1 }',
    ])
    expect(logged.every((line) => line.fields.from === 'library')).toBe(true)
    expect(printed).toEqual([])
    restore()
    target.log('after')
    expect(printed).toEqual([['after']])
  })
})
