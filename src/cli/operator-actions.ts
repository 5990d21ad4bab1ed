import {
  formatUnits,
  getAddress,
  JsonRpcProvider,
  Network,
  parseEther,
  parseUnits,
  Wallet,
} from 'ethers'
import { chainsFromSettings } from '../config/chains.ts'
import { errorKindOf, FeedrunnerError, rootCauseFirst } from '../config/errors.ts'
import {
  decryptKeystore,
  listKeystores,
  passwordFromFile,
  passwordFromVariable,
  settingsPassword,
} from '../config/keystore.ts'
import { privateKey as privateKeySchema } from '../config/settings-declared.ts'
import { endpointOf, SettingsError, type Settings } from '../config/settings.ts'
import {
  authorizeSenders,
  deployOperator,
  readOperator,
  withdrawLink,
} from '../chain/operator-admin.ts'
import { fetchChainId } from '../chain/provider.ts'
import { withDevStack } from './dev-state.ts'
import { settingsOrExit } from './lifecycle.ts'
import { renderTable } from './table.ts'

/** How a write command is signed: the Operator owner's key, raw in a variable or in a keystore. */
export interface OwnerOptions {
  ownerKeyEnv?: string
  ownerKeystore?: string
  passwordFile?: string
  passwordEnv?: string
  json?: boolean
}

export interface DeployCommandOptions extends OwnerOptions {
  link?: string
  newLink?: boolean
  consumer?: boolean
}

export interface AuthorizeCommandOptions extends OwnerOptions {
  operator: string
  sender: string[]
  replace?: boolean
  fundEth?: string
}

export interface WithdrawCommandOptions extends OwnerOptions {
  operator: string
  to?: string
  amount?: string
}

export interface ChainAccess {
  settings: Settings
  provider: JsonRpcProvider
  chainId: number
}

/**
 * Runs an operator command on the chain at RPC_URL (or the dev stack's of this checkout): a problem
 * is one line on stderr, exit code 1 for what the operator gave, 2 for a chain that failed.
 */
export async function onChain(run: (chain: ChainAccess) => Promise<void>): Promise<void> {
  const settings = settingsOrExit(withDevStack().env)
  if (!settings.RPC_URL) {
    console.error(
      'RPC_URL: required for the operator and aggregator commands (not set): the chain to act on',
    )
    process.exit(1)
  }
  let provider: JsonRpcProvider | undefined
  try {
    const chainId = await fetchChainId(settings.RPC_URL)
    // Receipts polled every 250 ms: a dev chain mines at once, a public one in seconds.
    provider = new JsonRpcProvider(settings.RPC_URL, Network.from(chainId), {
      staticNetwork: true,
      pollingInterval: 250,
      cacheTimeout: -1,
    })
    await run({ settings, provider, chainId })
  } catch (error) {
    // Our messages already carry the node's short reason; ethers' own dumps the whole request.
    console.error(
      error instanceof SettingsError
        ? error.problems.join('\n')
        : error instanceof FeedrunnerError
          ? error.message
          : rootCauseFirst(error),
    )
    const kind = errorKindOf(error)
    process.exitCode =
      kind === 'bad_input' || kind === 'config' || kind === 'not_authorised' ? 1 : 2
  } finally {
    provider?.destroy()
  }
}

/** The Operator owner's signer: a raw key from --owner-key-env, or a keystore with its password. */
export function ownerSigner(options: OwnerOptions, provider: JsonRpcProvider): Wallet {
  if ((options.ownerKeyEnv === undefined) === (options.ownerKeystore === undefined))
    throw new SettingsError([
      "give the owner's key: --owner-key-env <variable> or --owner-keystore <file>, one of them",
    ])
  if (options.ownerKeyEnv !== undefined) {
    const variable = options.ownerKeyEnv
    const parsed = privateKeySchema.safeParse((process.env[variable] ?? '').trim())
    // The value is never repeated: it is (or was meant to be) a key.
    if (!parsed.success)
      throw new SettingsError([
        `--owner-key-env ${variable}: ${process.env[variable] ? 'does not hold a 0x-prefixed 32-byte private key' : 'not set'}`,
      ])
    return new Wallet(parsed.data, provider)
  }
  const password = options.passwordFile
    ? passwordFromFile(options.passwordFile)
    : options.passwordEnv
      ? passwordFromVariable(options.passwordEnv, process.env)
      : undefined
  if (!password)
    throw new SettingsError([
      '--owner-keystore: give its password with --password-file or --password-env',
    ])
  return decryptKeystore(options.ownerKeystore as string, password).connect(provider)
}

/** Prints JSON alone on stdout with --json, else the readable form; advice goes to stderr. */
export function print(options: { json?: boolean }, json: unknown, readable: () => string): void {
  console.log(options.json ? JSON.stringify(json, null, 2) : readable())
}

export function link(juels: bigint): string {
  return `${formatUnits(juels, 18)} LINK`
}

export async function deployAction(options: DeployCommandOptions): Promise<void> {
  await onChain(async ({ provider, chainId }) => {
    const owner = ownerSigner(options, provider)
    const deployment = await deployOperator(owner, {
      link: options.link,
      newLink: options.newLink,
      consumer: options.consumer,
      progress: (line) => console.error(line),
    })
    const json = {
      operator: deployment.operator,
      link: deployment.link,
      owner: deployment.owner,
      ...(deployment.consumer ? { consumer: deployment.consumer } : {}),
    }
    print(options, json, () =>
      [
        renderTable(
          ['contract', 'address'],
          [
            ['Operator', deployment.operator],
            [deployment.linkDeployed ? 'LinkToken (deployed here)' : 'LINK', deployment.link],
            ['owner', deployment.owner],
            ...(deployment.consumer ? [['FeedConsumer', deployment.consumer]] : []),
          ],
        ),
        '',
        `on chain ${chainId}. Next: feedrunner operator authorize --operator ${deployment.operator} ...,`,
        `then feedrunner jobs retarget --operator ${deployment.operator} --out <folder> for the specs.`,
      ].join('\n'),
    )
  })
}

/** The node's sender addresses: --sender, else KEYSTORE_DIR, NODE_PRIVATE_KEY(S) or CHAINS_FILE's chain. */
export function senderAddresses(
  settings: Settings,
  chainId: number,
  given: readonly string[],
): { addresses: string[]; from: string } {
  if (given.length > 0) return { addresses: [...given], from: '--sender' }
  if (settings.KEYSTORE_DIR) {
    const password = settingsPassword(settings)
    const addresses = listKeystores(settings.KEYSTORE_DIR).map((keystore) => {
      if (keystore.address) return keystore.address
      if (!password)
        throw new SettingsError([
          `${keystore.path} does not name its address: set KEYSTORE_PASSWORD_FILE to open it`,
        ])
      return decryptKeystore(keystore.path, password).address
    })
    if (addresses.length > 0) return { addresses, from: `KEYSTORE_DIR ${settings.KEYSTORE_DIR}` }
  }
  const keys = settings.NODE_PRIVATE_KEYS?.length
    ? settings.NODE_PRIVATE_KEYS
    : settings.NODE_PRIVATE_KEY
      ? [settings.NODE_PRIVATE_KEY]
      : settings.CHAINS_FILE
        ? (chainsFromSettings({ ...settings, RPC_URL: undefined }).find(
            (chain) => chain.chainId === chainId,
          )?.keys ?? [])
        : []
  if (keys.length === 0)
    throw new SettingsError([
      'no sender keys to authorise: set KEYSTORE_DIR (feedrunner keys create) or NODE_PRIVATE_KEY(S), or give --sender <address>',
    ])
  return { addresses: keys.map((key) => new Wallet(key).address), from: 'the node keys' }
}

export async function authorizeAction(options: AuthorizeCommandOptions): Promise<void> {
  await onChain(async ({ settings, provider, chainId }) => {
    const owner = ownerSigner(options, provider)
    const { addresses, from } = senderAddresses(settings, chainId, options.sender)
    let fundWei: bigint | undefined
    if (options.fundEth !== undefined) {
      try {
        fundWei = parseEther(options.fundEth)
      } catch {
        throw new FeedrunnerError(
          `--fund-eth ${options.fundEth}: expected an amount of ETH, e.g. 0.5`,
          {
            kind: 'bad_input',
          },
        )
      }
    }
    const result = await authorizeSenders(owner, options.operator, addresses, {
      replace: options.replace,
      fundWei,
    })
    print(
      options,
      { operator: options.operator, authorizedSenders: result.authorizedSenders, txs: result.txs },
      () =>
        [
          `authorised senders of ${options.operator} (${from} added${fundWei ? `, each funded with ${options.fundEth} ETH` : ''}):`,
          ...result.authorizedSenders.map((sender) => `  ${sender}`),
          result.txs.length === 0
            ? '(nothing to change)'
            : `transactions: ${result.txs.join(', ')}`,
        ].join('\n'),
    )
  })
}

export async function showAction(options: { operator: string; json?: boolean }): Promise<void> {
  await onChain(async ({ settings, provider, chainId }) => {
    const state = await readOperator(provider, options.operator)
    // Everything the table shows, amounts in juels.
    const json = {
      operator: getAddress(options.operator),
      chainId,
      rpc: endpointOf(settings.RPC_URL!),
      owner: state.owner,
      authorizedSenders: state.authorizedSenders,
      linkToken: state.link,
      linkBalance: state.linkBalance.toString(),
      withdrawable: state.withdrawable.toString(),
    }
    print(options, json, () =>
      renderTable(
        ['Operator', `${options.operator} (chain ${chainId}, ${endpointOf(settings.RPC_URL!)})`],
        [
          ['owner', state.owner],
          [
            'authorised senders',
            state.authorizedSenders.length === 0 ? '(none)' : state.authorizedSenders.join(', '),
          ],
          ['LINK token', state.link],
          ['LINK balance', `${link(state.linkBalance)} (${state.linkBalance} juels)`],
          ['withdrawable', `${link(state.withdrawable)} (${state.withdrawable} juels)`],
        ],
      ),
    )
  })
}

export async function withdrawAction(options: WithdrawCommandOptions): Promise<void> {
  await onChain(async ({ provider }) => {
    const owner = ownerSigner(options, provider)
    let amount: bigint | undefined
    if (options.amount !== undefined) {
      try {
        amount = parseUnits(options.amount, 18)
      } catch {
        throw new FeedrunnerError(
          `--amount ${options.amount}: expected an amount of LINK, e.g. 1.5`,
          {
            kind: 'bad_input',
          },
        )
      }
    }
    const result = await withdrawLink(owner, options.operator, { recipient: options.to, amount })
    print(
      options,
      {
        operator: options.operator,
        recipient: result.recipient,
        amount: result.amount.toString(),
        tx: result.tx ?? null,
      },
      () =>
        result.tx
          ? `withdrew ${link(result.amount)} to ${result.recipient} in ${result.tx}`
          : `nothing to withdraw from ${options.operator} (its LINK is escrowed for open requests, or it has none)`,
    )
  })
}
