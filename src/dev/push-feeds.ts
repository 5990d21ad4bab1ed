import { Contract, getAddress, getCreateAddress, parseEther, Wallet } from 'ethers'
import { addOracles, deployAggregator, fundAggregator } from '../chain/flux/aggregator-admin.ts'
import { readAggregator } from '../chain/flux/aggregator.ts'
import { fluxArtifacts } from '../chain/artifacts.ts'
import { FeedrunnerError } from '../config/errors.ts'
import type { DevContracts } from './deploy.ts'
import { deployPushedValue, PUSHED_VALUE } from './pushed-value.ts'

/**
 * The contracts of the push jobs in `jobs/push/` (cron, webhook, fluxmonitor), deployed by the dev
 * stack that runs them: two PushedValues and Chainlink's FluxAggregator. Anvil's account 9 deploys
 * them and nothing else, so on a fresh chain they are always at its nonces 0, 1 and 2, whatever else
 * the chain holds, and the specs name those addresses.
 */

/** Anvil's account 9 (its published test key): deploys and owns the push feeds' contracts. */
export const PUSH_DEPLOYER_KEY =
  '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6'
export const PUSH_DEPLOYER_ADDRESS = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'

/** Where each push job writes on a dev chain (PUSH_DEPLOYER_ADDRESS's nonces 0, 1, 2). */
export const DEV_PUSH_ADDRESSES = {
  /** PushedValue of jobs/push/cron-floor-price.toml. */
  cron: '0x700b6A60ce7EaaEA56F065753d8dcB9653dbAD35',
  /** PushedValue of jobs/push/webhook-floor-price.toml. */
  webhook: '0xA15BB66138824a1c7167f5E85b957d04Dd34E468',
  /** FluxAggregator of jobs/push/flux-floor-price.toml. */
  aggregator: '0xb19b36b1456E65E3A6D514D3F715f204BD59f431',
} as const

/** LINK each submission pays the oracle, and what the aggregator is funded with (100,000 rounds). */
export const DEV_AGGREGATOR_PAYMENT = parseEther('0.001')
export const DEV_AGGREGATOR_FUNDS = parseEther('100')

export interface PushContracts {
  cron: string
  webhook: string
  aggregator: string
  /** The node key that is the aggregator's oracle (the first node key). */
  oracle: string
  /** True when they were on the chain already (a dev chain given with RPC_URL). */
  reused: boolean
}

const ORDER = ['cron', 'webhook', 'aggregator'] as const

/**
 * Deploys the push feeds' contracts at their fixed addresses, or takes them when the chain has them
 * (then the first node key is made an oracle if it is not one). The PushedValues take the node keys
 * as writers; the aggregator pays 0.001 LINK a submission, holds 100 LINK from the dev deployer, and
 * has the first node key as its one oracle (one submission answers a round).
 */
export async function deployPushContracts(
  dev: Pick<DevContracts, 'provider' | 'artifacts' | 'deployer' | 'addresses'>,
): Promise<PushContracts> {
  const owner = new Wallet(PUSH_DEPLOYER_KEY, dev.provider)
  const nodes = dev.addresses.nodes
  const oracle = nodes[0]!
  const nonce = await dev.provider.getTransactionCount(owner.address, 'pending')
  if (nonce > 0) return { ...(await deployedBefore(dev, owner, nonce)), oracle, reused: true }
  const cron = await deployPushedValue({ ...dev, deployer: owner }, nodes, 'MAYC floor (cron)')
  const webhook = await deployPushedValue({ ...dev, deployer: owner }, nodes, 'NFT floor (webhook)')
  const { aggregator } = await deployAggregator(owner, {
    link: dev.addresses.linkToken,
    paymentAmount: DEV_AGGREGATOR_PAYMENT,
    timeout: 60,
    decimals: 2,
    description: 'BAYC floor (fluxmonitor)',
    artifacts: fluxArtifacts(),
  })
  // The dev deployer holds the dev LINK; the aggregator counts it once updateAvailableFunds ran.
  await fundAggregator(dev.deployer, aggregator, DEV_AGGREGATOR_FUNDS)
  await addOracles(owner, aggregator, [oracle], { minSubmissions: 1 })
  const deployed = { cron, webhook, aggregator: getAddress(aggregator) }
  for (const name of ORDER)
    if (getAddress(deployed[name]) !== DEV_PUSH_ADDRESSES[name])
      throw new FeedrunnerError(
        `the push feeds' ${name} contract went to ${deployed[name]}, not ${DEV_PUSH_ADDRESSES[name]} (the address jobs/push names): was another transaction of ${owner.address} sent meanwhile?`,
        { kind: 'config' },
      )
  return { ...DEV_PUSH_ADDRESSES, oracle, reused: false }
}

/** The contracts an earlier stack deployed on this chain, with the first node key an oracle. */
async function deployedBefore(
  dev: Pick<DevContracts, 'provider' | 'addresses'>,
  owner: Wallet,
  nonce: number,
): Promise<Omit<PushContracts, 'oracle' | 'reused'>> {
  const expected = ORDER.map((_, at) => getCreateAddress({ from: owner.address, nonce: at }))
  const codes = await Promise.all(expected.map((address) => dev.provider.getCode(address)))
  if (nonce < ORDER.length || codes.some((code) => code === '0x'))
    throw new FeedrunnerError(
      `${owner.address} (anvil's account 9) has sent transactions on this chain that did not deploy the push feeds' contracts, so they cannot be at the addresses jobs/push names: use a fresh dev chain`,
      { kind: 'config' },
    )
  const aggregator = await readAggregator(dev.provider, DEV_PUSH_ADDRESSES.aggregator)
  const oracle = getAddress(dev.addresses.nodes[0]!)
  if (!aggregator.oracles.some((known) => known.address === oracle))
    await addOracles(owner, aggregator.address, [oracle], {
      minSubmissions: 1,
      maxSubmissions: 1,
    })
  const writers = new Contract(DEV_PUSH_ADDRESSES.cron, PUSHED_VALUE, dev.provider)
  if (!((await writers.getFunction('writers')(oracle)) as boolean))
    throw new FeedrunnerError(
      `the push feeds' PushedValues on this chain take other writers than the node key ${oracle}: use a fresh dev chain, or that chain's node keys`,
      { kind: 'config' },
    )
  return { ...DEV_PUSH_ADDRESSES }
}

/** What a push job of jobs/push/ writes, as the demo checks it on chain. */
export interface PushFeed {
  type: 'cron' | 'webhook' | 'fluxmonitor'
  /** Its spec, in jobs/push/. */
  file: string
  externalJobId: string
  /** Which of the push contracts it writes to. */
  contract: keyof typeof DEV_PUSH_ADDRESSES
  /** The NFT collection whose floor price (ETH, times 100) it writes; the webhook's: the demo's call names it. */
  collection: string
}

/** The push jobs the dev stack runs, one of each type, each an NFT floor of the shipped data set. */
export const DEV_PUSH_FEEDS: readonly PushFeed[] = [
  {
    type: 'cron',
    file: 'cron-floor-price.toml',
    externalJobId: '7a3e2c10-5b4d-4f8e-9c61-2d0b8e4f1a01',
    contract: 'cron',
    // Mutant Ape Yacht Club
    collection: '0x60e4d786628fea6478f785a6d7e704777c86a7c6',
  },
  {
    type: 'webhook',
    file: 'webhook-floor-price.toml',
    externalJobId: '7a3e2c10-5b4d-4f8e-9c61-2d0b8e4f1a02',
    contract: 'webhook',
    // Azuki
    collection: '0xed5af388653567af2f388e6224dc7c4b3241c544',
  },
  {
    type: 'fluxmonitor',
    file: 'flux-floor-price.toml',
    externalJobId: '7a3e2c10-5b4d-4f8e-9c61-2d0b8e4f1a03',
    contract: 'aggregator',
    // Bored Ape Yacht Club
    collection: '0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d',
  },
]
