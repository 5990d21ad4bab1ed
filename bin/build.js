#!/usr/bin/env node
// Compiles src/ to plain JavaScript in dist/ and the Solidity contracts into .cache/contracts (npm install
// runs it as `prepare`; `npm run build` by hand).
// bin/feedrunner.js runs dist/ only while it matches src/ (see source-fingerprint.js), so a stale or
// missing build never runs: the CLI then runs the sources through tsx. Without typescript (an install
// without dev dependencies) nothing is built here, and the CLI says what to do when it starts.
import { existsSync, rmSync, renameSync, writeFileSync } from 'node:fs'
import { URL, fileURLToPath } from 'node:url'
import { compileSources, findTsc } from './compile.js'
import { builtFingerprint, sourceFingerprint } from './source-fingerprint.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const src = `${root}src`
const dist = `${root}dist`
const staging = `${root}dist.tmp`
const replaced = `${root}dist.old`

const tsc = findTsc()
if (!tsc) {
  console.log(
    'feedrunner build: typescript is not installed (no dev dependencies), so dist/ is not built; a production install builds with them and drops them after: npm install, then npm prune --omit=dev',
  )
  process.exit(0)
}

const fingerprint = sourceFingerprint(src)
// A build of the sources as they are is left alone: `npx feedrunner` in the checkout installs the
// project into npx's cache, which runs this (`prepare`) again, and replacing dist/ under processes
// that were starting from it made them fail to find their modules (the bench beside the docs test).
if (builtFingerprint(dist) === fingerprint) {
  console.log('feedrunner build: dist/ is already built from src/ as it is now')
} else {
  const compiled = await compileSources(root, staging, tsc)
  if (!compiled.ok) {
    console.error(`feedrunner build: ${compiled.why}; dist/ is unchanged`)
    process.exit(1)
  }
  writeFileSync(
    `${staging}/BUILD.json`,
    `${JSON.stringify({ fingerprint, builtAt: new Date().toISOString() }, null, 2)}\n`,
  )
  // Two renames: dist/ is missing for a moment only, not for as long as deleting it takes.
  rmSync(replaced, { recursive: true, force: true })
  if (existsSync(dist)) renameSync(dist, replaced)
  renameSync(staging, dist)
  rmSync(replaced, { recursive: true, force: true })
  console.log('feedrunner build: src/ compiled to dist/')
}

// The Solidity contracts the dev stack deploys, compiled now so the first `npm start` reads them from
// .cache/contracts instead of loading solc for 5-25 s (issue 19). Same function and cache key as at
// run time, so an edited contract is still compiled when it is next used.
try {
  const { compileContracts, fluxArtifacts } = await import(`${dist}/chain/artifacts.js`)
  const { testTokenArtifacts } = await import(`${dist}/feeds/server/blockchain/demo-tokens.js`)
  const progress = (line) => console.log(`feedrunner build: ${line}`)
  const contracts = Object.keys(compileContracts(undefined, undefined, progress)).length
  const tokens = Object.keys(testTokenArtifacts(progress)).length
  const flux = Object.keys(fluxArtifacts(progress)).length
  console.log(`feedrunner build: ${contracts + tokens + flux} contracts ready in .cache/contracts`)
} catch (error) {
  // The sources are what is wrong, and the dev stack says so again when it needs them; the install
  // itself (dependencies, dist/) is fine.
  console.error(
    `feedrunner build: contracts not compiled (${error instanceof Error ? error.message : String(error)}); the dev stack compiles them when it starts`,
  )
}
