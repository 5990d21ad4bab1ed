// What an install without dev dependencies (`npm prune --omit=dev`, the production image) carries:
// none of the tools that only build, test or run the dev chain. Read from the lockfile, where npm
// marks every package only the dev dependencies need (`"dev": true`): that is what it leaves out.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const projectRoot = resolve(import.meta.dirname, '../..')

/** Built ahead (the Solidity compilers, TypeScript's runner) or only for `dev` (anvil). */
const DEV_ONLY = [
  '@foundry-rs/anvil',
  '@foundry-rs/anvil-linux-amd64',
  'solc-0.6.6',
  'solc-0.8.19',
  'tsx',
  'esbuild',
]

interface LockedPackage {
  dev?: boolean
}

describe('a production install', () => {
  it('has no dev chain, Solidity compiler or TypeScript runner', () => {
    const lock = JSON.parse(readFileSync(resolve(projectRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, LockedPackage>
    }
    const production = new Set<string>()
    for (const [path, locked] of Object.entries(lock.packages))
      if (path !== '' && !locked.dev)
        production.add(path.slice(path.lastIndexOf('node_modules/') + 13))
    // The walk found the tree (a wrong reading would leave it empty and pass).
    expect(production.has('ethers')).toBe(true)
    expect(production.has('bullmq')).toBe(true)
    // Each is in the lockfile (installed for development), and none where production needs it.
    for (const name of DEV_ONLY) expect(lock.packages[`node_modules/${name}`], name).toBeDefined()
    expect(DEV_ONLY.filter((name) => production.has(name))).toEqual([])
  })
})
