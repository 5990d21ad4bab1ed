// What an install without dev dependencies (`npm prune --omit=dev`, the production image) carries:
// none of the tools that only build, test or run the dev chain. Read from the lockfile's tree by npm.
import { execFileSync } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const projectRoot = resolve(import.meta.dirname, '../..')

/** Built ahead (the Solidity compilers, TypeScript's runner) or only for `dev` (anvil). */
const DEV_ONLY = ['@foundry-rs/anvil', 'solc-0.6.6', 'solc-0.8.19', 'solc', 'tsx', 'esbuild']

describe('a production install', () => {
  it('has no dev chain, Solidity compiler or TypeScript runner', () => {
    const tree = JSON.parse(
      execFileSync('npm', ['ls', '--omit=dev', '--all', '--json'], {
        cwd: projectRoot,
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      }),
    ) as { dependencies?: Record<string, Tree> }
    const names = new Set<string>()
    collect(tree.dependencies ?? {}, names)
    // The walk found the tree (a wrong command would leave it empty and pass).
    expect(names.has('ethers')).toBe(true)
    expect(names.has('bullmq')).toBe(true)
    expect(DEV_ONLY.filter((name) => names.has(name))).toEqual([])
  })
})

interface Tree {
  dependencies?: Record<string, Tree>
}

function collect(dependencies: Record<string, Tree>, names: Set<string>): void {
  for (const [name, tree] of Object.entries(dependencies)) {
    names.add(name)
    collect(tree.dependencies ?? {}, names)
  }
}
