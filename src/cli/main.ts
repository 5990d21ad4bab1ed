import { readFileSync } from 'node:fs'
import { Command } from 'commander'
import { applyHeapGrowth } from '../config/heap-growth.ts'
import { loadDotEnv, SettingsError } from '../config/settings.ts'
import { useWasmKeccak } from '../chain/keccak.ts'
import { register as registerAdapter } from './adapter.ts'
import { register as registerFeeds } from './feeds.ts'
import { register as registerJobs } from './jobs.ts'
import { register as registerRunner } from './runner.ts'
import { register as registerDev } from './dev.ts'

// Wiring only: each command group lives in its own file in this folder and exports
// `register(program: Command): void`; add one import and one call per group below.

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

const program = new Command()
  .name('feedrunner')
  .description('External adapter and direct-request job runner for the Data Feed Query Service')
  .version(packageJson.version, '-V, --version', 'print the version')
  .helpOption('-h, --help', 'print this help')
  .helpCommand('help [command]', 'print the help of a command')
  .showHelpAfterError()

registerDev(program)
registerRunner(program)
registerAdapter(program)
registerFeeds(program)
registerJobs(program)

/** The help's sections: what a newcomer runs first comes first. */
const HELP_GROUPS: Record<string, string> = {
  dev: 'On this machine:',
  demo: 'On this machine:',
  request: 'On this machine:',
  status: 'Looking at a running feedrunner (the dev stack of this checkout, or REDIS_URL):',
  runs: 'Looking at a running feedrunner (the dev stack of this checkout, or REDIS_URL):',
  start: 'Production (settings from the environment and .env):',
  adapter: 'Production (settings from the environment and .env):',
  worker: 'Production (settings from the environment and .env):',
  runner: 'Production (settings from the environment and .env):',
  feeds: 'Feeds and job specs:',
  jobs: 'Feeds and job specs:',
}
for (const command of program.commands) command.helpGroup(HELP_GROUPS[command.name()] ?? 'Other:')
program.addHelpText(
  'after',
  `
First steps: npm start (the whole stack, = feedrunner dev), then in another terminal
feedrunner request game-odds. The manual is docs/README.md; every setting: docs/configuration.md.`,
)

await program.parseAsync(process.argv)
