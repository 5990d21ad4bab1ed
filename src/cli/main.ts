import { readFileSync } from 'node:fs'

// The same path from src/cli and dist/cli.
const packageJson = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string }
// The EA framework labels app_version and answers its status from npm's variable, which only
// `npm run`/`npm start` set: a process started as `npx feedrunner` or `node bin/feedrunner.js` showed
// "undefined".
process.env.npm_package_version = packageJson.version

// `--version` alone is answered before the commands are built: their options load the settings'
// schema (zod), which took most of the answer's time.
if (process.argv.length === 3 && ['--version', '-V'].includes(process.argv[2]!)) {
  console.log(packageJson.version)
  process.exit(0)
}

const { buildProgram } = await import('./program.ts')
const { readsOnly } = await import('./readers.ts')
const program = buildProgram(packageJson.version)
// What a command runs with is set up once it is known which command runs: --version and --help load
// nothing more, and a command that only reads (status, runs show, ...) is not held up by ethers.
program.hook('preAction', async (_program, command) => {
  const { loadDotEnv, SettingsError } = await import('../config/settings.ts')
  // `.env` in the working directory, under what the environment already says; every command parses
  // the settings once, from process.env, in its composition root.
  try {
    loadDotEnv()
  } catch (error) {
    console.error(error instanceof SettingsError ? error.message : String(error))
    process.exit(1)
  }
  ;(await import('../config/heap-growth.ts')).applyHeapGrowth(process.env)
  if (!readsOnly(command)) await (await import('../chain/keccak.ts')).useWasmKeccak()
})
await program.parseAsync(process.argv)
