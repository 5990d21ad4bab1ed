import { describe, expect, it } from 'vitest'
import { parseSettings, SettingsError } from '../../src/config/settings.ts'
import { runJsonFixture } from '../support/json-fixture.ts'

function peakHeapMb(growthPercent: string): number {
  return runJsonFixture<{ peakHeapMb: number }>(
    new URL('./fixtures/heap-churn.ts', import.meta.url),
    { HEAP_GROWTH_PERCENT: growthPercent },
  ).peakHeapMb
}

describe('HEAP_GROWTH_PERCENT', () => {
  // 300 % is V8's own factor on a machine with several GB; set explicitly, so any machine compares the same.
  it('keeps the heap near its live objects: at the default 30 % a churning heap peaks well below its peak at 300 %', () => {
    const wide = peakHeapMb('300')
    const default30 = peakHeapMb('')
    expect(default30).toBeLessThan(wide * 0.7)
  }, 60_000)

  it('is refused by name when it is not a percentage', () => {
    expect(() => parseSettings({ HEAP_GROWTH_PERCENT: 'lots' })).toThrow(SettingsError)
    expect(() => parseSettings({ HEAP_GROWTH_PERCENT: 'lots' })).toThrow(/HEAP_GROWTH_PERCENT/)
    expect(parseSettings({}).HEAP_GROWTH_PERCENT).toBe(30)
  })
})
