import type { Command } from 'commander'

// The stack (ethers, solc, the EA framework) loads only when one of these commands runs.
const actions = (): Promise<typeof import('./dev-actions.ts')> => import('./dev-actions.ts')

export function register(program: Command): void {
  program
    .command('dev')
    .description(
      'The whole stack on this machine: anvil with the contracts, the local feed service, Redis, the adapter, fetch workers and the runner',
    )
    .action(async () => (await actions()).devAction())

  program
    .command('demo')
    .description(
      'Starts the stack, requests every job spec in JOBS_DIR once on chain, prints what was stored; exits 0 only if every value is the expected one',
    )
    .option('--timeout <seconds>', 'how long to wait for the fulfilments', '60')
    .action(async (options: { timeout: string }) => (await actions()).demoAction(options))

  program
    .command('request <job>')
    .description(
      'Sends requests for a job (its name, file name or externalJobID) through the FeedConsumer and prints each value stored on chain',
    )
    .option('-p, --param <key=value>', 'a request parameter (repeatable)', collect, [] as string[])
    .option('-n, --count <n>', 'how many requests to send', '1')
    .option('--timeout <seconds>', 'how long to wait for the fulfilments', '60')
    .action(async (job: string, options: { param: string[]; count: string; timeout: string }) =>
      (await actions()).requestAction(job, options),
    )
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}
