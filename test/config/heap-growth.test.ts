import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { parseSettings, SettingsError } from '../../src/config/settings.ts'

const churn = new URL('./fixtures/heap-churn.ts', import.meta.url).pathname

function peakHeapMb(growthPercent: string): number {
  const output = execFileSync(process.execPath, ['--import', 'tsx', churn], { env: { ...process.env, HEAP_GROWTH_PERCENT: growthPercent }, encoding: 'utf8' })
  return (JSON.parse(output.trim().split('\n').at(-1) as string) as { peakHeapMb: number }).peakHeapMb
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
