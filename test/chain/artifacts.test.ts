import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  compileContracts,
  sharedContractsCacheDir,
  SOLC_0_6,
  SOLC_0_8,
} from '../../src/chain/artifacts.ts'
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

  // The cache key takes solc's version from the npm alias, so an install without solc (a dev
  // dependency) still finds the build; the alias must name the version it installs.
  it('keys the cache by the solc version each npm alias installs', () => {
    const require = createRequire(import.meta.url)
    for (const release of [SOLC_0_8, SOLC_0_6]) {
      const installed = require(`${release.packageName}/package.json`) as { version: string }
      expect(release.version).toBe(installed.version)
    }
  })

  const scratch = mkdtempSync(join(tmpdir(), 'feedrunner-artifacts-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))
  const units = ['contracts/test/TestERC20.sol']

  it('says that it compiles and how long it took on a miss, and nothing on a hit', () => {
    const lines: string[] = []
    const cacheDir = join(scratch, 'cache')
    const first = compileContracts(units, cacheDir, (line) => lines.push(line))
    expect(first.TestERC20?.bytecode).toMatch(/^0x[0-9a-f]{100,}$/)
    expect(lines[0]).toMatch(/^compiling 1 Solidity source\(s\) \(\d+ files with imports\)/)
    expect(lines[0]).toContain(cacheDir)
    expect(lines[1]).toMatch(/^compiled in \d+\.\d s$/)

    const again: string[] = []
    expect(compileContracts(units, cacheDir, (line) => again.push(line))).toEqual(first)
    expect(again).toEqual([])
  }, 120_000)

  it('still returns the contracts when the cache cannot be written (a read-only install)', () => {
    const blocker = join(scratch, 'a-file')
    writeFileSync(blocker, '')
    const lines: string[] = []
    const compiled = compileContracts(units, join(blocker, 'contracts'), (line) => lines.push(line))
    expect(Object.keys(compiled)).toContain('TestERC20')
    expect(lines.at(-1)).toMatch(
      /^could not cache the compiled contracts in .*a-file\/contracts \(ENOTDIR\)/,
    )
  }, 120_000)

  it('a second checkout of the same sources reads the shared cache; a changed source compiles', () => {
    const source = join(scratch, 'Shared.sol')
    const contract = (answer: number) =>
      `// SPDX-License-Identifier: MIT\npragma solidity ^0.8.0;\ncontract Shared { function f() external pure returns (uint256) { return ${answer}; } }\n`
    writeFileSync(source, contract(1))
    const shared = join(scratch, 'shared')
    const checkout = (name: string, lines: string[]) =>
      compileContracts([source], join(scratch, name), (line) => lines.push(line), SOLC_0_8, shared)

    const first: string[] = []
    const built = checkout('checkout-a', first)
    expect(first[0]).toMatch(/^compiling 1 Solidity source/)
    // Another checkout: its own cache is empty, the user's shared one has the build.
    const second: string[] = []
    expect(checkout('checkout-b', second)).toEqual(built)
    expect(second).toEqual([`1 Solidity source(s) compiled before, read from ${shared}`])
    // ... and now in that checkout's own cache too.
    const third: string[] = []
    expect(checkout('checkout-b', third)).toEqual(built)
    expect(third).toEqual([])

    writeFileSync(source, contract(2))
    const changed: string[] = []
    const rebuilt = checkout('checkout-c', changed)
    expect(changed[0]).toMatch(/^compiling 1 Solidity source/)
    expect(rebuilt.Shared?.bytecode).not.toBe(built.Shared?.bytecode)
  }, 120_000)

  it('keeps the shared cache in XDG_CACHE_HOME, else ~/.cache', () => {
    expect(sharedContractsCacheDir({ XDG_CACHE_HOME: '/var/cache/me' })).toBe(
      '/var/cache/me/feedrunner/contracts',
    )
    expect(sharedContractsCacheDir({})).toMatch(/\/\.cache\/feedrunner\/contracts$/)
  })
})
