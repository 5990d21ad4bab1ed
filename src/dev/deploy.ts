import {
  Contract,
  ContractFactory,
  Wallet,
  getAddress,
  getCreateAddress,
  parseEther,
  ZeroAddress,
  type InterfaceAbi,
} from 'ethers'
import { artifact, compileContracts, type ArtifactSet } from '../chain/artifacts.ts'
import { connectProvider, type ChainProvider } from '../chain/provider.ts'
import { ANVIL_PRIVATE_KEYS } from './anvil.ts'

/**
 * Addresses on a fresh dev chain: anvil's account 0 deploys LinkToken with nonce 0, the Operator with
 * nonce 1, the FeedConsumer with nonce 2 and an AuthorizedForwarder with nonce 3, so job specs in
 * `jobs/` can name them.
 */
export const DEV_DEPLOYER_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
export const DEV_LINK_TOKEN_ADDRESS = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
export const DEV_OPERATOR_ADDRESS = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
export const DEV_CONSUMER_ADDRESS = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'
export const DEV_FORWARDER_ADDRESS = '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9'

/** LINK minted to the consumer so it can pay for requests (10,000 LINK). */
export const DEV_CONSUMER_LINK = parseEther('10000')

export interface DeployOptions {
  /** Deploys and owns everything; default anvil account 0. */
  deployerKey?: string
  /** Keys whose addresses become the Operator's authorised senders; default anvil account 1. */
  nodeKeys?: readonly string[]
  /** LINK (juels) minted to the consumer. */
  consumerLink?: bigint
  /** LINK (juels) minted to the deployer, e.g. to fund more consumers. */
  deployerLink?: bigint
  provider?: ChainProvider
  artifacts?: ArtifactSet
}

export interface DevAddresses {
  deployer: string
  linkToken: string
  operator: string
  consumer: string
  /** Chainlink's AuthorizedForwarder: it authorises the node keys, the Operator authorises it. */
  forwarder: string
  nodes: string[]
}

export interface DevContracts {
  addresses: DevAddresses
  chainId: number
  provider: ChainProvider
  deployer: Wallet
  linkToken: Contract
  operator: Contract
  consumer: Contract
  forwarder: Contract
  /** True when the contracts were already on the chain (deployer nonce > 0) and were reused. */
  reused: boolean
  artifacts: ArtifactSet
}

/**
 * Deploys LinkToken, Operator, FeedConsumer and an AuthorizedForwarder in a fixed order and sets them
 * up: the consumer holds LINK, the node keys are the Operator's authorised senders and the
 * forwarder's, and the Operator authorises the forwarder too (jobs with forwardingAllowed send through
 * it). On a chain where the deployer already deployed them (nonce > 0 and code at the fixed addresses)
 * they are reused, not deployed again.
 */
export async function deployDevContracts(
  rpcUrl: string,
  options: DeployOptions = {},
): Promise<DevContracts> {
  const provider = options.provider ?? (await connectProvider(rpcUrl, { pollingIntervalMs: 100 }))
  const chainId = Number((await provider.getNetwork()).chainId)
  const artifacts = options.artifacts ?? compileContracts()
  const deployer = new Wallet(options.deployerKey ?? ANVIL_PRIVATE_KEYS[0], provider)
  const nodes = (options.nodeKeys ?? [ANVIL_PRIVATE_KEYS[1]]).map((key) => new Wallet(key).address)
  const chain: DevChain = { provider, artifacts, deployer, nodes }
  const found = await deployedBefore(chain)
  if (found) {
    await authorizeNodes(found.operator, [...nodes, await found.forwarder.getAddress()])
    await authorizeNodes(found.forwarder, nodes)
  }
  const set = found ?? (await deployAndSetUp(chain, options))
  const addressOf = async (contract: Contract) => getAddress(await contract.getAddress())
  return {
    addresses: {
      deployer: deployer.address,
      linkToken: await addressOf(set.linkToken),
      operator: await addressOf(set.operator),
      consumer: await addressOf(set.consumer),
      forwarder: await addressOf(set.forwarder),
      nodes,
    },
    chainId,
    provider,
    deployer,
    ...set,
    reused: found !== undefined,
    artifacts,
  }
}

/** The chain the dev set goes on, and who deploys it and sends for it. */
interface DevChain {
  provider: ChainProvider
  artifacts: ArtifactSet
  deployer: Wallet
  nodes: string[]
}

/** The four contracts, in the order the deployer creates them. */
type DevSet = Pick<DevContracts, 'linkToken' | 'operator' | 'consumer' | 'forwarder'>

function handle(chain: DevChain, name: string, address: string): Contract {
  return new Contract(address, artifact(chain.artifacts, name).abi as InterfaceAbi, chain.deployer)
}

/** The set this deployer made before: its nonce is past 0 and its first four addresses hold code. */
async function deployedBefore(chain: DevChain): Promise<DevSet | undefined> {
  const { provider, deployer } = chain
  if ((await provider.getTransactionCount(deployer.address, 'pending')) === 0) return undefined
  const expected = [0, 1, 2, 3].map((n) => getCreateAddress({ from: deployer.address, nonce: n }))
  const codes = await Promise.all(expected.map((address) => provider.getCode(address)))
  if (codes.some((code) => code === '0x')) return undefined
  return {
    linkToken: handle(chain, 'LinkToken', expected[0]!),
    operator: handle(chain, 'Operator', expected[1]!),
    consumer: handle(chain, 'FeedConsumer', expected[2]!),
    forwarder: handle(chain, 'AuthorizedForwarder', expected[3]!),
  }
}

/**
 * Deploys the four contracts in their fixed order, then funds the consumer and the deployer with LINK
 * and authorises the node keys (and, at the Operator, the forwarder); nonces are counted here so the
 * transactions go out without waiting for each other.
 */
async function deployAndSetUp(chain: DevChain, options: DeployOptions): Promise<DevSet> {
  const { deployer, nodes } = chain
  let nonce = await chain.provider.getTransactionCount(deployer.address, 'pending')
  const deploy = async (name: string, args: unknown[]) => {
    const { abi, bytecode } = artifact(chain.artifacts, name)
    const factory = new ContractFactory(abi as InterfaceAbi, bytecode, deployer)
    const contract = await factory.deploy(...args, { nonce: nonce++ })
    await contract.waitForDeployment()
    return handle(chain, name, await contract.getAddress())
  }
  const linkToken = await deploy('LinkToken', [])
  const link = await linkToken.getAddress()
  const operator = await deploy('Operator', [link, deployer.address])
  const consumer = await deploy('FeedConsumer', [link, await operator.getAddress()])
  const forwarder = await deploy('AuthorizedForwarder', [link, deployer.address, ZeroAddress, '0x'])
  const mint = linkToken.getFunction('mint')
  const sent = [
    await linkToken.getFunction('grantMintRole')(deployer.address, { nonce: nonce++ }),
    await mint(await consumer.getAddress(), options.consumerLink ?? DEV_CONSUMER_LINK, {
      nonce: nonce++,
    }),
    await mint(deployer.address, options.deployerLink ?? DEV_CONSUMER_LINK, { nonce: nonce++ }),
    await operator.getFunction('setAuthorizedSenders')([...nodes, await forwarder.getAddress()], {
      nonce: nonce++,
    }),
    await forwarder.getFunction('setAuthorizedSenders')(nodes, { nonce: nonce++ }),
  ]
  for (const tx of sent) {
    const receipt = await tx.wait()
    if (receipt?.status !== 1) throw new Error(`dev chain setup transaction ${tx.hash} failed`)
  }
  return { linkToken, operator, consumer, forwarder }
}

/**
 * Makes sure every address may send to `receiver`, an Operator or a forwarder (setAuthorizedSenders
 * replaces the whole list).
 */
async function authorizeNodes(receiver: Contract, nodes: readonly string[]): Promise<void> {
  const authorized = await Promise.all(
    nodes.map((node) => receiver.getFunction('isAuthorizedSender')(node) as Promise<boolean>),
  )
  if (authorized.every(Boolean)) return
  const current = (await receiver.getFunction('getAuthorizedSenders')()) as string[]
  const all = [...new Set([...current, ...nodes].map((address) => getAddress(address)))]
  const receipt = await (await receiver.getFunction('setAuthorizedSenders')(all)).wait()
  if (receipt?.status !== 1) throw new Error('setAuthorizedSenders failed')
}

/**
 * Deploys one more FeedConsumer for the same LINK token and Operator (a second requester, as the
 * Operator sees the consumer contract as the requester) and funds it with LINK from the deployer.
 */
export async function deployFeedConsumer(
  dev: DevContracts,
  fundLink: bigint = parseEther('100'),
): Promise<Contract> {
  const { abi, bytecode } = artifact(dev.artifacts, 'FeedConsumer')
  const factory = new ContractFactory(abi as InterfaceAbi, bytecode, dev.deployer)
  const deployed = await factory.deploy(dev.addresses.linkToken, dev.addresses.operator)
  await deployed.waitForDeployment()
  const address = await deployed.getAddress()
  const receipt = await (await dev.linkToken.getFunction('transfer')(address, fundLink)).wait()
  if (receipt?.status !== 1) throw new Error('funding the new FeedConsumer failed')
  return new Contract(address, abi as InterfaceAbi, dev.deployer)
}
