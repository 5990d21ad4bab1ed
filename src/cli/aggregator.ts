import type { Command } from 'commander'
import type {
  AddOraclesCommandOptions,
  AggregatorDeployCommandOptions,
  AggregatorShowCommandOptions,
  AggregatorWithdrawCommandOptions,
} from './aggregator-actions.ts'

// ethers and the contract artifacts load only when one of these commands runs.
const actions = (): Promise<typeof import('./aggregator-actions.ts')> =>
  import('./aggregator-actions.ts')

function signerOptions(command: Command, whose: string): Command {
  return command
    .option('--owner-key-env <variable>', `the variable that holds ${whose} private key`)
    .option('--owner-keystore <file>', `${whose} key in a keystore instead`)
    .option('--password-file <file>', 'with --owner-keystore: the file holding its password')
    .option('--password-env <variable>', 'with --owner-keystore: the variable holding its password')
    .option('--json', 'print JSON')
}

/** `feedrunner aggregator deploy|add-oracles|show|withdraw`: Chainlink's FluxAggregator at RPC_URL. */
export function register(program: Command): void {
  const aggregator = program
    .command('aggregator')
    .description(
      "Chainlink's FluxAggregator on the chain at RPC_URL (or the dev stack's): a feed that oracles push on deviation and heartbeat",
    )
  signerOptions(
    aggregator
      .command('deploy')
      .description(
        "Deploys FluxAggregator owned by the owner's key; on a dev chain (or with --new-link) Chainlink's LinkToken first, else the chain's LINK",
      ),
    "the owner's",
  )
    .requiredOption('--payment <link>', 'LINK paid to each oracle per submission, e.g. 0.1')
    .option('--timeout <seconds>', 'seconds before an unfinished round may be superseded', '600')
    .option('--decimals <n>', 'decimals of the answer, for consumers', '0')
    .option('--description <text>', 'what the feed reports', 'feedrunner feed')
    .option('--min-value <n>', 'the smallest submission accepted', '0')
    .option('--max-value <n>', 'the largest submission accepted (default: int256 max)')
    .option('--link <address>', "the chain's LINK token")
    .option('--new-link', 'deploy a LinkToken of its own (a private network without LINK)')
    .option(
      '--fund <link>',
      'LINK put into it at once (minted on a LinkToken deployed here, else sent by the owner)',
    )
    .action(async (options: AggregatorDeployCommandOptions) =>
      (await actions()).deployAction(options),
    )
  signerOptions(
    aggregator
      .command('add-oracles')
      .description(
        "Adds oracles (the node's sender keys: KEYSTORE_DIR, NODE_PRIVATE_KEY(S), or --oracle) and sets how many submissions make a round",
      ),
    "the owner's",
  )
    .requiredOption('--aggregator <address>', 'the FluxAggregator')
    .option(
      '--oracle <address>',
      'an oracle address instead of the node keys (repeatable)',
      collect,
      [],
    )
    .option('--admin <address>', "who withdraws the added oracles' payments (default: the owner)")
    .requiredOption('--min-submissions <n>', 'submissions that answer a round')
    .option('--max-submissions <n>', 'submissions a round takes at most (default: every oracle)')
    .option('--restart-delay <n>', 'rounds an oracle waits before it starts another', '0')
    .action(async (options: AddOraclesCommandOptions) =>
      (await actions()).addOraclesAction(options),
    )
  aggregator
    .command('show')
    .description(
      "The aggregator: its latest rounds and answers, oracles, funds, and what this node's keys may withdraw",
    )
    .requiredOption('--aggregator <address>', 'the FluxAggregator')
    .option('--rounds <n>', 'rounds shown before the latest', '5')
    .option('--json', 'print JSON')
    .action(async (options: AggregatorShowCommandOptions) => (await actions()).showAction(options))
  signerOptions(
    aggregator
      .command('withdraw')
      .description("Withdraws an oracle's earned LINK; signed by the oracle's admin"),
    "the oracle admin's",
  )
    .requiredOption('--aggregator <address>', 'the FluxAggregator')
    .option('--oracle <address>', "the oracle (default: the node's only sender key)")
    .option('--to <address>', 'the recipient (default: the admin)')
    .option('--amount <link>', 'how much, in LINK (default: all that is withdrawable)')
    .action(async (options: AggregatorWithdrawCommandOptions) =>
      (await actions()).withdrawAction(options),
    )
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}
