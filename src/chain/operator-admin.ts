import {
  Contract,
  ContractFactory,
  formatUnits,
  getAddress,
  Interface,
  type ContractTransactionResponse,
  type InterfaceAbi,
  type JsonRpcApiProvider,
  type Provider,
  type Signer,
} from 'ethers'
import { FeedrunnerError } from '../config/errors.ts'
import { artifact, compileContracts, type ArtifactSet } from './artifacts.ts'
import { authorisedSenders } from './operator.ts'

/**
 * Chainlink's Operator on any chain, as its owner runs it: deploy it (and Chainlink's LinkToken on a
 * chain that has none), make the node's sender keys its authorised senders, read its state, withdraw
 * the LINK it earned. Each write is checked before it is sent (the owner, the amounts), so a mistake
 * is one line instead of a revert.
 */

const OPERATOR_ADMIN_ABI = [
  'function owner() view returns (address)',
  'function setAuthorizedSenders(address[] senders)',
  'function getChainlinkToken() view returns (address)',
  'function withdrawable() view returns (uint256)',
  'function withdraw(address recipient, uint256 amount)',
  'function distributeFunds(address[] receivers, uint256[] amounts) payable',
]
const LINK_ABI = [
  'function balanceOf(address owner) view returns (uint256)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function grantMintRole(address minter)',
  'function mint(address account, uint256 amount)',
]
const operatorAdmin = new Interface(OPERATOR_ADMIN_ABI)
/** The LinkToken calls an owner makes (ERC-20, and the mint role of the LinkToken deployed on a dev chain). */
export const linkToken = new Interface(LINK_ABI)

/** LINK of the public chains where feedrunner knows it (docs.chain.link/resources/link-token-contracts). */
export const KNOWN_LINK_TOKENS: Readonly<Record<number, string>> = {
  1: '0x514910771AF9Ca656af840dff83E8264EcF986CA',
  11155111: '0x779877A7B0D9E8603169DdbD7836e478b4624789',
}

/** Chain ids of local development chains (anvil, Hardhat, Ganache), where a LinkToken of our own is fine. */
const DEV_CHAIN_IDS: ReadonlySet<number> = new Set([31337, 1337])

export interface OperatorState {
  owner: string
  authorizedSenders: string[]
  link: string
  linkBalance: bigint
  withdrawable: bigint
}

/** The Operator at `address`: its owner, senders, LINK token, LINK held and what its owner may withdraw. */
export async function readOperator(provider: Provider, address: string): Promise<OperatorState> {
  const operator = getAddress(address)
  if ((await provider.getCode(operator)) === '0x')
    throw new FeedrunnerError(
      `no contract at ${operator} on this chain: is --operator the address operator deploy printed, and RPC_URL its chain?`,
      { kind: 'bad_input' },
    )
  const contract = new Contract(operator, operatorAdmin, provider)
  try {
    const [owner, senders, link, withdrawable] = await Promise.all([
      contract.getFunction('owner')() as Promise<string>,
      authorisedSenders(provider, operator),
      contract.getFunction('getChainlinkToken')() as Promise<string>,
      contract.getFunction('withdrawable')() as Promise<bigint>,
    ])
    const linkBalance = (await new Contract(link, linkToken, provider).getFunction('balanceOf')(
      operator,
    )) as bigint
    return {
      owner: getAddress(owner),
      authorizedSenders: senders.map((sender) => getAddress(sender)),
      link: getAddress(link),
      linkBalance,
      withdrawable,
    }
  } catch (error) {
    throw new FeedrunnerError(
      `the contract at ${operator} does not answer as Chainlink's Operator (${shortReason(error)})`,
      { kind: 'bad_input', cause: error },
    )
  }
}

export interface DeployOptions {
  /** The chain's LINK; without it, a LinkToken is deployed on a dev chain (or with `newLink`). */
  link?: string
  /** Deploy a LinkToken of our own even on a chain that is not a dev chain (a private network). */
  newLink?: boolean
  /** Also deploy a FeedConsumer for this Operator, funded with `consumerLink` juels. */
  consumer?: boolean
  consumerLink?: bigint
  artifacts?: ArtifactSet
  /** Progress lines (stderr in the CLI). */
  progress?: (line: string) => void
}

export interface Deployment {
  operator: string
  link: string
  owner: string
  /** True when this deployment made the LinkToken. */
  linkDeployed: boolean
  consumer?: string
}

/** Deploys Chainlink's Operator owned by `owner`, with the chain's LINK or a LinkToken of its own. */
export async function deployOperator(
  owner: Signer,
  options: DeployOptions = {},
): Promise<Deployment> {
  const provider = owner.provider as Provider
  const chainId = Number((await provider.getNetwork()).chainId)
  const ownerAddress = getAddress(await owner.getAddress())
  await needGas(provider, ownerAddress, 'the owner')
  const artifacts = options.artifacts ?? compileContracts()
  const progress = options.progress ?? (() => undefined)
  const deploy = async (name: string, args: unknown[]): Promise<Contract> => {
    const { abi, bytecode } = artifact(artifacts, name)
    const contract = await step(`deploying ${name}`, async () => {
      const deployed = await new ContractFactory(abi as InterfaceAbi, bytecode, owner).deploy(
        ...args,
      )
      await deployed.waitForDeployment()
      return deployed as unknown as Contract
    })
    progress(`${name} at ${await contract.getAddress()}`)
    return contract
  }

  const { link, linkDeployed } = await chooseLinkToken(provider, chainId, options, async () =>
    getAddress(await (await deploy('LinkToken', [])).getAddress()),
  )
  const operator = getAddress(await (await deploy('Operator', [link, ownerAddress])).getAddress())
  const deployment: Deployment = { operator, link, owner: ownerAddress, linkDeployed }
  if (options.consumer) {
    const consumer = await deploy('FeedConsumer', [link, operator])
    deployment.consumer = getAddress(await consumer.getAddress())
    await fundConsumer(owner, deployment, options.consumerLink ?? 10n ** 21n, progress)
  }
  return deployment
}

/** LINK for the consumer's requests: minted on a LinkToken deployed here, else sent by the owner. */
async function fundConsumer(
  owner: Signer,
  deployment: Deployment,
  amount: bigint,
  progress: (line: string) => void,
): Promise<void> {
  const link = new Contract(deployment.link, linkToken, owner)
  const consumer = deployment.consumer as string
  if (deployment.linkDeployed) {
    await send('granting the mint role', () => link.getFunction('grantMintRole')(deployment.owner))
    await send('minting LINK', () => link.getFunction('mint')(consumer, amount))
  } else {
    const held = (await link.getFunction('balanceOf')(deployment.owner)) as bigint
    if (held < amount) {
      progress(
        `the owner holds ${held} juels of LINK, less than ${amount}: send LINK to the consumer ${consumer} before it requests`,
      )
      return
    }
    await send('sending LINK', () => link.getFunction('transfer')(consumer, amount))
  }
  progress(`FeedConsumer ${consumer} holds ${formatUnits(amount, 18)} LINK`)
}

export interface AuthorizeOptions {
  /** Set exactly these senders instead of adding them to the Operator's list. */
  replace?: boolean
  /** Wei sent to each sender (Operator.distributeFunds), for the gas of its fulfilments. */
  fundWei?: bigint
}

/**
 * Makes `senders` authorised senders of the Operator (setAuthorizedSenders replaces the whole list,
 * so the current ones are kept unless `replace`), and funds them with `fundWei` each.
 */
export async function authorizeSenders(
  owner: Signer,
  operatorAddress: string,
  senders: readonly string[],
  options: AuthorizeOptions = {},
): Promise<{ authorizedSenders: string[]; txs: string[] }> {
  const provider = owner.provider as Provider
  const state = await readOperator(provider, operatorAddress)
  const ownerAddress = getAddress(await owner.getAddress())
  if (state.owner !== ownerAddress)
    throw new FeedrunnerError(
      `${ownerAddress} is not the owner of the Operator ${getAddress(operatorAddress)} (its owner is ${state.owner}): give the owner's key`,
      { kind: 'not_authorised' },
    )
  await needGas(provider, ownerAddress, 'the owner')
  const wanted = senders.map((sender) => getAddress(sender))
  const list = options.replace
    ? [...new Set(wanted)]
    : [...new Set([...state.authorizedSenders, ...wanted])]
  const operator = new Contract(getAddress(operatorAddress), operatorAdmin, owner)
  const txs: string[] = []
  const same =
    list.length === state.authorizedSenders.length &&
    list.every((sender) => state.authorizedSenders.includes(sender))
  if (!same)
    txs.push(
      await send('setAuthorizedSenders', () => operator.getFunction('setAuthorizedSenders')(list)),
    )
  if (options.fundWei !== undefined && options.fundWei > 0n && wanted.length > 0) {
    const amounts = wanted.map(() => options.fundWei as bigint)
    txs.push(
      await send('distributeFunds', () =>
        operator.getFunction('distributeFunds')(wanted, amounts, {
          value: options.fundWei! * BigInt(wanted.length),
        }),
      ),
    )
  }
  return { authorizedSenders: list, txs }
}

/** Withdraws `amount` juels (default: all that is withdrawable) of the Operator's LINK to `recipient`. */
export async function withdrawLink(
  owner: Signer,
  operatorAddress: string,
  options: { recipient?: string; amount?: bigint } = {},
): Promise<{ recipient: string; amount: bigint; tx: string | undefined }> {
  const provider = owner.provider as Provider
  const state = await readOperator(provider, operatorAddress)
  const ownerAddress = getAddress(await owner.getAddress())
  if (state.owner !== ownerAddress)
    throw new FeedrunnerError(
      `${ownerAddress} is not the owner of the Operator ${getAddress(operatorAddress)} (its owner is ${state.owner}): only the owner withdraws`,
      { kind: 'not_authorised' },
    )
  const recipient = getAddress(options.recipient ?? ownerAddress)
  const amount = options.amount ?? state.withdrawable
  if (amount > state.withdrawable)
    throw new FeedrunnerError(
      `${amount} juels asked, ${state.withdrawable} withdrawable (the payments of open requests stay escrowed)`,
      { kind: 'bad_input' },
    )
  if (amount === 0n) return { recipient, amount, tx: undefined }
  const operator = new Contract(getAddress(operatorAddress), operatorAdmin, owner)
  const tx = await send('withdraw', () => operator.getFunction('withdraw')(recipient, amount))
  return { recipient, amount, tx }
}

/**
 * The LINK token a deploy uses: `--link` (checked to be a contract), the chain's known token, or on a
 * dev chain (or with `--new-link`) a LinkToken deployed by `deployLink`; anything else is refused.
 */
export async function chooseLinkToken(
  provider: Provider,
  chainId: number,
  options: { link?: string; newLink?: boolean },
  deployLink: () => Promise<string>,
): Promise<{ link: string; linkDeployed: boolean }> {
  const link = options.link === undefined ? KNOWN_LINK_TOKENS[chainId] : getAddress(options.link)
  if (link !== undefined) {
    if ((await provider.getCode(link)) === '0x')
      throw new FeedrunnerError(`no contract at --link ${link} on chain ${chainId}`, {
        kind: 'bad_input',
      })
    return { link, linkDeployed: false }
  }
  if (options.newLink || (await isDevChain(provider, chainId)))
    return { link: await deployLink(), linkDeployed: true }
  throw new FeedrunnerError(
    `chain ${chainId} is not a dev chain: give --link <its LINK address> (docs.chain.link/resources/link-token-contracts), or --new-link for a LinkToken of your own on a private network`,
    { kind: 'bad_input' },
  )
}

/** A local development chain (anvil, Hardhat, Ganache, by chain id or by what the node calls itself). */
export async function isDevChain(provider: Provider, chainId: number): Promise<boolean> {
  if (DEV_CHAIN_IDS.has(chainId)) return true
  if (!('send' in provider)) return false
  const version: unknown = await (provider as JsonRpcApiProvider)
    .send('web3_clientVersion', [])
    .catch(() => '')
  return typeof version === 'string' && /^(anvil|hardhatnetwork|ganache)/i.test(version)
}

/** Refuses a write from an account with no gas money, naming it (the node's words are long). */
export async function needGas(provider: Provider, address: string, who: string): Promise<void> {
  if ((await provider.getBalance(address)) === 0n)
    throw new FeedrunnerError(
      `${who} ${address} holds no ETH on this chain to pay for gas: fund it first`,
      { kind: 'bad_input' },
    )
}

/** Sends a transaction and waits for its receipt; a failure names the step. Answers the hash. */
export async function send(
  what: string,
  submit: () => Promise<ContractTransactionResponse>,
): Promise<string> {
  return step(what, async () => {
    const tx = await submit()
    const receipt = await tx.wait()
    if (receipt?.status !== 1)
      throw new FeedrunnerError(`transaction ${tx.hash} reverted`, { kind: 'reverted' })
    return tx.hash
  })
}

export async function step<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (error instanceof FeedrunnerError) throw error
    throw new FeedrunnerError(`${what} failed: ${shortReason(error)}`, {
      kind: 'node_refused',
      cause: error,
    })
  }
}

/** ethers' short message (a revert reason, a node's refusal) without its dump of the request. */
export function shortReason(error: unknown): string {
  const shortMessage = (error as { shortMessage?: unknown }).shortMessage
  if (typeof shortMessage === 'string') return shortMessage
  return error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error)
}
