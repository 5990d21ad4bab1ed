import { Command } from 'commander'
import { register as registerAdapter } from './adapter.ts'
import { register as registerFeeds } from './feeds.ts'
import { register as registerJobs } from './jobs.ts'
import { register as registerRunner } from './runner.ts'
import { register as registerDev } from './dev.ts'
import { register as registerOperator } from './operator.ts'
import { register as registerKeys } from './keys.ts'
import { register as registerInitiators } from './initiators.ts'
import { register as registerAggregator } from './aggregator.ts'

// Wiring only: each command group lives in its own file in this folder and exports
// `register(program: Command): void`; add one import and one call per group below. Building the
// program runs nothing (each command loads what it needs when it runs), so the docs' test reads every
// command and option from it.

/** The `feedrunner` command line: every command, its options and the help's layout. */
export function buildProgram(version: string): Command {
  const program = new Command()
    .name('feedrunner')
    .description('External adapter and direct-request job runner for the Data Feed Query Service')
    .version(version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    .helpCommand('help [command]', 'print the help of a command')
    .showHelpAfterError()

  registerDev(program)
  registerRunner(program)
  registerAdapter(program)
  registerFeeds(program)
  registerJobs(program)
  registerOperator(program)
  registerKeys(program)
  registerInitiators(program)
  registerAggregator(program)

  // The help's sections: what a newcomer runs first comes first.
  const helpGroups: Record<string, string> = {
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
    operator: 'A chain of your own (Operator contract, sender keys):',
    keys: 'A chain of your own (Operator contract, sender keys):',
    initiators: 'Production (settings from the environment and .env):',
    aggregator: 'A chain of your own (Operator contract, sender keys):',
  }
  for (const command of program.commands) command.helpGroup(helpGroups[command.name()] ?? 'Other:')
  program.addHelpText(
    'after',
    `
First steps: npm start (the whole stack, = feedrunner dev), then in another terminal
feedrunner request game-odds. The manual is docs/README.md; every setting: docs/configuration.md.`,
  )
  return program
}
