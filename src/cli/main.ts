import { Command } from 'commander'
import { applyHeapGrowth } from '../config/heap-growth.ts'
import { useWasmKeccak } from '../chain/keccak.ts'
import { register as registerAdapter } from './adapter.ts'
import { register as registerFeeds } from './feeds.ts'
import { register as registerJobs } from './jobs.ts'
import { register as registerRunner } from './runner.ts'
import { register as registerDev } from './dev.ts'

// Wiring only: each command group lives in its own file in this folder and exports
// `register(program: Command): void`; add one import and one call per group below.

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
