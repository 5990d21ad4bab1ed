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
applyHeapGrowth(process.env)
await useWasmKeccak()

const program = new Command()
  .name('feedrunner')
  .description('External adapter and direct-request job runner for the Data Feed Query Service')
  .showHelpAfterError()

registerAdapter(program)
registerFeeds(program)
registerJobs(program)
registerRunner(program)
registerDev(program)

await program.parseAsync(process.argv)
