import { Command } from 'commander'

// Wiring only: each command group lives in its own file and registers itself here.
const program = new Command()
  .name('feedrunner')
  .description('External adapter and direct-request job runner for the Data Feed Query Service')
  .showHelpAfterError()

await program.parseAsync(process.argv)
