import { describe, expect, it } from 'vitest'
import { runJsonFixture } from '../support/json-fixture.ts'

describe('compileContracts', () => {
  // The global setup has compiled once, so the cache holds this build.
  it('reads a cached build without loading solc (~100 MB once loaded)', () => {
    const { contracts, solcLoaded } = runJsonFixture<{ contracts: number; solcLoaded: boolean }>(
      new URL('./fixtures/compile-report.ts', import.meta.url),
    )
    expect(contracts).toBeGreaterThanOrEqual(3)
    expect(solcLoaded).toBe(false)
  })
})
