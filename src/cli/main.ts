import { readFileSync } from 'node:fs'
import { applyHeapGrowth } from '../config/heap-growth.ts'
import { loadDotEnv, SettingsError } from '../config/settings.ts'
import { useWasmKeccak } from '../chain/keccak.ts'
import { buildProgram } from './program.ts'

// `.env` in the working directory, under what the environment already says; every command parses the
// settings once, from process.env, in its composition root.
try {
  loadDotEnv()
} catch (error) {
  console.error(error instanceof SettingsError ? error.message : String(error))
  process.exit(1)
}

// The same path from src/cli and dist/cli.
const packageJson = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string }
// The EA framework labels app_version and answers its status from npm's variable, which only
// `npm run`/`npm start` set: a process started as `npx feedrunner` or `node bin/feedrunner.js` showed
// "undefined".
process.env.npm_package_version = packageJson.version

applyHeapGrowth(process.env)
await useWasmKeccak()

await buildProgram(packageJson.version).parseAsync(process.argv)
