import type { Command } from 'commander'
import type {
  DeployCommandOptions,
  AuthorizeCommandOptions,
  WithdrawCommandOptions,
} from './operator-actions.ts'

// ethers and the contract artifacts load only when one of these commands runs.
const actions = (): Promise<typeof import('./operator-actions.ts')> =>
  import('./operator-actions.ts')

function ownerOptions(command: Command): Command {
  return command
    .option('--owner-key-env <variable>', "the variable that holds the owner's private key")
    .option('--owner-keystore <file>', "the owner's key in a keystore instead")
    .option('--password-file <file>', 'with --owner-keystore: the file holding its password')
    .option('--password-env <variable>', 'with --owner-keystore: the variable holding its password')
    .option('--json', 'print JSON')
}

/** `feedrunner operator deploy|authorize|show|withdraw`: Chainlink's Operator on the chain at RPC_URL. */
export function register(program: Command): void {
  const operator = program
    .command('operator')
    .description(
      "Chainlink's Operator contract on the chain at RPC_URL (or the dev stack's): deploy it, authorise the node's keys, read it, withdraw its LINK",
    )
  ownerOptions(
    operator
      .command('deploy')
      .description(
        "Deploys Operator owned by the owner's key; on a dev chain (or with --new-link) Chainlink's LinkToken first, else the chain's LINK",
      ),
  )
    .option('--link <address>', "the chain's LINK token")
    .option('--new-link', 'deploy a LinkToken of its own (a private network without LINK)')
    .option(
      '--consumer',
      'also deploy a FeedConsumer for it, holding 1,000 LINK (minted, or sent by the owner), for feedrunner request',
    )
    .action(async (options: DeployCommandOptions) => (await actions()).deployAction(options))
  ownerOptions(
    operator
      .command('authorize')
      .description(
        "Makes the node's sender keys (KEYSTORE_DIR, NODE_PRIVATE_KEY(S), or --sender) authorised senders of the Operator, keeping those it has",
      ),
  )
    .requiredOption('--operator <address>', 'the Operator')
    .option(
      '--sender <address>',
      'a sender address instead of the node keys (repeatable)',
      collect,
      [],
    )
    .option('--replace', 'set exactly these senders (the others lose their authorisation)')
    .option('--fund-eth <amount>', 'also send each sender this much ETH for gas (distributeFunds)')
    .action(async (options: AuthorizeCommandOptions) => (await actions()).authorizeAction(options))
  operator
    .command('show')
    .description(
      'The Operator: owner, authorised senders, LINK held and what its owner can withdraw',
    )
    .requiredOption('--operator <address>', 'the Operator')
    .option('--json', 'print JSON')
    .action(async (options: { operator: string; json?: boolean }) =>
      (await actions()).showAction(options),
    )
  ownerOptions(
    operator
      .command('withdraw')
      .description("Withdraws the Operator's earned LINK (what is not escrowed for open requests)"),
  )
    .requiredOption('--operator <address>', 'the Operator')
    .option('--to <address>', 'the recipient (default: the owner)')
    .option('--amount <link>', 'how much, in LINK (default: all that is withdrawable)')
    .action(async (options: WithdrawCommandOptions) => (await actions()).withdrawAction(options))
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value]
}
