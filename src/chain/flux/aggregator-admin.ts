import {
  Contract,
  ContractFactory,
  getAddress,
  type InterfaceAbi,
  type Provider,
  type Signer,
} from 'ethers'
import { FeedrunnerError } from '../../config/errors.ts'
import { artifact, compileContracts, fluxArtifacts, type ArtifactSet } from '../artifacts.ts'
import { chooseLinkToken, linkToken, needGas, send, step } from '../operator-admin.ts'
import { fluxAggregatorInterface, readAggregator } from './aggregator.ts'

/**
 * Chainlink's FluxAggregator as its owner and its oracles' admins run it: deploy it (with the chain's
 * LINK, or a LinkToken of its own on a dev chain), fund it, add oracles, withdraw an oracle's
 * payment. Each write is checked first (the owner, the admin, the funds the contract will ask for),
 * so a mistake is one line that names the remedy instead of a revert.
 */

export interface AggregatorDeployOptions {
  link?: string
  newLink?: boolean
  /** Juels paid to each oracle per submission. */
  paymentAmount: bigint
  /** Seconds after which an unfinished round may be superseded. */
  timeout: number
  decimals: number
  description: string
  minSubmissionValue?: bigint
  maxSubmissionValue?: bigint
  /** Juels of LINK put into the aggregator after it is deployed (minted on a LinkToken deployed here). */
  fund?: bigint
  artifacts?: ArtifactSet
  progress?: (line: string) => void
}

export interface AggregatorDeployment {
  aggregator: string
  link: string
  owner: string
  linkDeployed: boolean
  funded: bigint
}

const INT256_MAX = (1n << 255n) - 1n

/** Deploys FluxAggregator owned by `owner`, and funds it with `fund` juels when asked. */
export async function deployAggregator(
  owner: Signer,
  options: AggregatorDeployOptions,
): Promise<AggregatorDeployment> {
  const provider = owner.provider as Provider
  const chainId = Number((await provider.getNetwork()).chainId)
  const ownerAddress = getAddress(await owner.getAddress())
  await needGas(provider, ownerAddress, 'the owner')
  const progress = options.progress ?? (() => undefined)
  const deploy = async (name: string, artifacts: ArtifactSet, args: unknown[]): Promise<string> => {
    const { abi, bytecode } = artifact(artifacts, name)
    const address = await step(`deploying ${name}`, async () => {
      const deployed = await new ContractFactory(abi as InterfaceAbi, bytecode, owner).deploy(
        ...args,
      )
      await deployed.waitForDeployment()
      return getAddress(await deployed.getAddress())
    })
    progress(`${name} at ${address}`)
    return address
  }
  const { link, linkDeployed } = await chooseLinkToken(provider, chainId, options, () =>
    deploy('LinkToken', compileContracts(), []),
  )
  const aggregator = await deploy('FluxAggregator', options.artifacts ?? fluxArtifacts(progress), [
    link,
    options.paymentAmount,
    options.timeout,
    '0x0000000000000000000000000000000000000000',
    options.minSubmissionValue ?? 0n,
    options.maxSubmissionValue ?? INT256_MAX,
    options.decimals,
    options.description,
  ])
  const deployment = { aggregator, link, owner: ownerAddress, linkDeployed, funded: 0n }
  if (options.fund !== undefined && options.fund > 0n)
    deployment.funded = await fundAggregator(owner, aggregator, options.fund, {
      mint: linkDeployed,
    })
  return deployment
}

/**
 * Puts `amount` juels of LINK into the aggregator: sent by the signer (minted first with `mint`, on a
 * LinkToken deployed here), then `updateAvailableFunds` so the contract counts it.
 */
export async function fundAggregator(
  signer: Signer,
  aggregator: string,
  amount: bigint,
  options: { mint?: boolean } = {},
): Promise<bigint> {
  const provider = signer.provider as Provider
  const from = getAddress(await signer.getAddress())
  const state = await readAggregator(provider, aggregator, { rounds: 0 })
  const link = new Contract(state.link, linkToken, signer)
  if (options.mint) {
    await send('granting the mint role', () => link.getFunction('grantMintRole')(from))
    await send('minting LINK', () => link.getFunction('mint')(from, amount))
  }
  const held = (await link.getFunction('balanceOf')(from)) as bigint
  if (held < amount)
    throw new FeedrunnerError(
      `${from} holds ${held} juels of LINK, less than the ${amount} to fund the aggregator with: send it LINK first`,
      { kind: 'bad_input' },
    )
  await send('sending LINK', () => link.getFunction('transfer')(state.address, amount))
  const contract = new Contract(state.address, fluxAggregatorInterface, signer)
  await send('updateAvailableFunds', () => contract.getFunction('updateAvailableFunds')())
  return amount
}

export interface AddOraclesOptions {
  /** Each oracle's admin (who withdraws its payment); default: the owner for every oracle. */
  admins?: readonly string[]
  minSubmissions: number
  maxSubmissions?: number
  restartDelay?: number
}

/** Adds oracles and sets the round sizes (changeOracles); the funds the contract asks for are checked first. */
export async function addOracles(
  owner: Signer,
  aggregatorAddress: string,
  oracles: readonly string[],
  options: AddOraclesOptions,
): Promise<{ oracles: string[]; tx: string }> {
  const provider = owner.provider as Provider
  const state = await readAggregator(provider, aggregatorAddress, { rounds: 0 })
  const ownerAddress = getAddress(await owner.getAddress())
  if (state.owner !== ownerAddress)
    throw new FeedrunnerError(
      `${ownerAddress} is not the owner of the aggregator ${state.address} (its owner is ${state.owner}): give the owner's key`,
      { kind: 'not_authorised' },
    )
  const known = new Set(state.oracles.map((oracle) => oracle.address))
  const added = [...new Set(oracles.map((oracle) => getAddress(oracle)))].filter(
    (oracle) => !known.has(oracle),
  )
  const admins = added.map((_, i) => getAddress(options.admins?.[i] ?? ownerAddress))
  const count = known.size + added.length
  const max = options.maxSubmissions ?? count
  const delay = options.restartDelay ?? 0
  if (options.minSubmissions < 1 || options.minSubmissions > max || max > count)
    throw new FeedrunnerError(
      `--min-submissions ${options.minSubmissions} and --max-submissions ${max} with ${count} oracles: need 1 <= min <= max <= oracles`,
      { kind: 'bad_input' },
    )
  if (delay >= count)
    throw new FeedrunnerError(
      `--restart-delay ${delay} with ${count} oracles: it must be below the number of oracles`,
      { kind: 'bad_input' },
    )
  // The contract keeps two rounds of payments for every oracle in reserve.
  const reserve = state.paymentAmount * BigInt(count) * 2n
  if (state.availableFunds < reserve)
    throw new FeedrunnerError(
      `the aggregator holds ${state.availableFunds} juels of LINK available, and ${count} oracles paid ${state.paymentAmount} each need ${reserve} in reserve: fund it first (aggregator deploy --fund, or send LINK to it)`,
      { kind: 'bad_input' },
    )
  const contract = new Contract(state.address, fluxAggregatorInterface, owner)
  const tx = await send('changeOracles', () =>
    contract.getFunction('changeOracles')([], added, admins, options.minSubmissions, max, delay),
  )
  return { oracles: [...known, ...added], tx }
}

/** Withdraws `oracle`'s payment (default: all of it) to `recipient`; only the oracle's admin may. */
export async function withdrawOraclePayment(
  admin: Signer,
  aggregatorAddress: string,
  oracle: string,
  options: { recipient?: string; amount?: bigint } = {},
): Promise<{ recipient: string; amount: bigint; tx: string | undefined }> {
  const provider = admin.provider as Provider
  const state = await readAggregator(provider, aggregatorAddress, { rounds: 0 })
  const adminAddress = getAddress(await admin.getAddress())
  const entry = state.oracles.find((known) => known.address === getAddress(oracle))
  if (!entry)
    throw new FeedrunnerError(`${getAddress(oracle)} is not an oracle of ${state.address}`, {
      kind: 'bad_input',
    })
  if (entry.admin !== adminAddress)
    throw new FeedrunnerError(
      `${adminAddress} is not the admin of the oracle ${entry.address} (its admin is ${entry.admin}): give the admin's key`,
      { kind: 'not_authorised' },
    )
  const recipient = getAddress(options.recipient ?? adminAddress)
  const amount = options.amount ?? entry.withdrawable
  if (amount > entry.withdrawable)
    throw new FeedrunnerError(
      `${amount} juels asked, ${entry.withdrawable} withdrawable by the oracle ${entry.address}`,
      { kind: 'bad_input' },
    )
  if (amount === 0n) return { recipient, amount, tx: undefined }
  const contract = new Contract(state.address, fluxAggregatorInterface, admin)
  const tx = await send('withdrawPayment', () =>
    contract.getFunction('withdrawPayment')(entry.address, recipient, amount),
  )
  return { recipient, amount, tx }
}
