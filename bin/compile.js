// src/ compiled to plain JavaScript in a directory: tsc, the isolate's thread bundled with the parts
// of ethers it uses (bundle-isolate.js), and the data files the sources read next to themselves (the
// feed service's data set, recorded chain data). `bin/build.js` makes dist/ with it; a test makes a
// build of its own to run what an install runs.
import { spawnSync } from 'node:child_process'
import { cpSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { bundleIsolate } from './bundle-isolate.js'

/** Where typescript's compiler is, or undefined when it is not installed (no dev dependencies). */
export function findTsc() {
  try {
    return createRequire(import.meta.url).resolve('typescript/bin/tsc')
  } catch {
    return undefined
  }
}

/**
 * Compiles `${root}src` into `outDir` (made anew); says what failed in one line and removes `outDir`
 * when a step fails.
 */
export async function compileSources(root, outDir, tsc) {
  rmSync(outDir, { recursive: true, force: true })
  const compiled = spawnSync(
    process.execPath,
    [tsc, '-p', `${root}tsconfig.build.json`, '--outDir', outDir],
    { stdio: 'inherit' },
  )
  if (compiled.status !== 0) {
    rmSync(outDir, { recursive: true, force: true })
    return { ok: false, why: `tsc failed (exit ${compiled.status})` }
  }
  try {
    await bundleIsolate(outDir)
  } catch (error) {
    rmSync(outDir, { recursive: true, force: true })
    return { ok: false, why: `the isolate's thread could not be bundled (${error})` }
  }
  cpSync(`${root}src`, outDir, { recursive: true, filter: (path) => !path.endsWith('.ts') })
  return { ok: true }
}
