import type { Command } from 'commander'

// The stack (ethers, solc, the EA framework) loads only when one of these commands runs.
const actions = (): Promise<typeof import('./dev-actions.ts')> => import('./dev-actions.ts')
const demo = (): Promise<typeof import('./dev-demo.ts')> => import('./dev-demo.ts')

export function register(program: Command): void {
  program
    .command('dev')
    .description(
      'The whole stack on this machine (= npm start): Redis, anvil with the contracts, the local feed service, the adapter, fetch workers and the runner; serves until Ctrl-C',
    )
    .action(async () => (await actions()).devAction())

  program
    .command('demo')
    .description(
      'One request per job spec in JOBS_DIR and the push jobs of jobs/push/ (a cron tick, a webhook call, a flux round), on a stack of its own; prints what the chain holds and exits 0 only if every value is the expected one',
    )
    .option(
      '--timeout <seconds>',
      "how long to wait for the fulfilments and for each push job's write",
      '60',
    )
    .action(async (options: { timeout: string }) => (await demo()).demoAction(options))

  program
    .command('request <job>')
    .description(
      "Requests a job (its name, file name or externalJobID) on the dev stack's chain and prints the value stored; with no --param, the documented example",
    )
    .option('-p, --param <key=value>', 'a request parameter (repeatable)', collect, [])
    .option('-n, --count <n>', 'how many requests to send', '1')
    .option('--timeout <seconds>', 'how long to wait for the fulfilments', '60')
    .option(
      '--payment <juels>',
      "LINK juels each request pays the Operator (default: the job's minContractPaymentLinkJuels)",
    )
    .action(
      async (
        job: string,
        options: { param: string[]; count: string; timeout: string; payment?: string },
      ) => (await import('./request-actions.ts')).requestAction(job, options),
    )
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}
