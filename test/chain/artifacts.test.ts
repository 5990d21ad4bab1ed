import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'

const report = new URL('./fixtures/compile-report.ts', import.meta.url).pathname

describe('compileContracts', () => {
  // The global setup has compiled once, so the cache holds this build.
  it('reads a cached build without loading solc (~100 MB once loaded)', () => {
    const output = execFileSync(process.execPath, ['--import', 'tsx', report], { encoding: 'utf8' })
    const { contracts, solcLoaded } = JSON.parse(output.trim().split('\n').at(-1) as string) as { contracts: number; solcLoaded: boolean }
    expect(contracts).toBeGreaterThanOrEqual(3)
    expect(solcLoaded).toBe(false)
  })
})
