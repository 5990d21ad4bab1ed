#!/usr/bin/env node
// Runs dist/ (src/ compiled by `npm install` or `npm run build`) when it was built from src/ as it is
// now, else the TypeScript sources through tsx (a dev dependency), so an edit takes effect without a
// build. Compiled JavaScript spares each process tsx's loader thread: ~40 MB of RSS (measured on
// Node 20; docs/performance.md).
import { existsSync } from 'node:fs'
import { URL, fileURLToPath } from 'node:url'
import { unsupportedNode } from './node-version.js'
import { builtFingerprint, sourceFingerprint } from './source-fingerprint.js'
import { argvWithYoungGeneration } from './young-generation.js'

const unsupported = unsupportedNode()
if (unsupported) {
  console.error(unsupported)
  process.exit(1)
}

const withYoungGeneration = argvWithYoungGeneration()
if (withYoungGeneration) process.execve(process.execPath, withYoungGeneration, process.env)

const root = new URL('..', import.meta.url)

function builtFromCurrentSources() {
  const built = builtFingerprint(fileURLToPath(new URL('dist', root)))
  if (built === undefined) return false
  // An install that ships dist/ without the sources (the container image) runs what it ships.
  if (!existsSync(new URL('src', root))) return true
  return built === sourceFingerprint(fileURLToPath(new URL('src', root)))
}

if (builtFromCurrentSources()) {
  await import(new URL('dist/cli/main.js', root).href)
} else {
  const tsx = await import('tsx/esm/api').catch((error) => {
    if (error?.code === 'ERR_MODULE_NOT_FOUND') return undefined
    throw error
  })
  if (tsx === undefined) {
    // tsx is a dev dependency: an install without them runs only a build of its sources.
    console.error(
      `feedrunner: ${fileURLToPath(new URL('dist', root))} is missing or older than src/, and tsx (a dev dependency) is not installed to run the sources: install with the dev dependencies (npm install builds dist/), then npm prune --omit=dev if the dev tools must go`,
    )
    process.exit(1)
  }
  tsx.register()
  await import('../src/cli/main.ts')
}
