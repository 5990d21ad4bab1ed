import {
  ContractFactory,
  NonceManager,
  type BaseContract,
  type ContractTransactionResponse,
  type Signer,
} from 'ethers'
import { artifact, compileContracts, type ArtifactSet } from '../../../chain/artifacts.ts'

// Test tokens (contracts/test) deployed on a dev chain, with one transfer of each kind, so the
// local service's `token-transfers` has real transactions to answer and tests have tokens to move.

/**
 * The test token sources, compiled alone so a broken contract elsewhere does not stop them.
 * TestERC777 needs an ERC1820 registry at the canonical address; TestERC1820Registry provides one
 * on a dev chain (tests copy its code there with anvil_setCode). TestClaimsEverything answers true
 * to every supportsInterface, for the EIP-165 detection tests.
 */
export const TEST_TOKEN_SOURCES = [
  'contracts/test/TestERC20.sol',
  'contracts/test/TestERC721.sol',
  'contracts/test/TestERC1155.sol',
  'contracts/test/TestERC777.sol',
  'contracts/test/TestERC1820Registry.sol',
  'contracts/test/TestClaimsEverything.sol',
] as const

export const DEMO_TOKEN_DETAILS = {
  erc20: { name: 'Feedrunner Test Token', symbol: 'FRT', decimals: 18 },
  erc721: { name: 'Feedrunner Test NFT', symbol: 'FRNFT' },
  erc1155: { uri: 'https://feedrunner.invalid/items/{id}.json' },
} as const

/** The anvil "dead" address: receives the demo transfers, so no dev key's balances change. */
export const DEMO_RECIPIENT = '0x000000000000000000000000000000000000dEaD'

export interface DemoTokens {
  recipient: string
  erc20: { address: string; transferTx: string; amount: bigint }
  erc721: { address: string; transferTx: string; tokenId: bigint }
  erc1155: {
    address: string
    transferSingleTx: string
    transferBatchTx: string
    single: { id: bigint; amount: bigint }
    batch: { ids: bigint[]; amounts: bigint[] }
  }
}

export function testTokenArtifacts(progress?: (line: string) => void): ArtifactSet {
  return compileContracts([...TEST_TOKEN_SOURCES], undefined, progress)
}

/** ethers' typed-less Contract method call, checked to return a transaction. */
async function send(contract: BaseContract, method: string, ...args: unknown[]): Promise<string> {
  const fn = contract.getFunction(method)
  const tx = (await fn(...args)) as ContractTransactionResponse
  const receipt = await tx.wait()
  if (receipt === null || receipt.status !== 1)
    throw new Error(`demo token ${method} failed (tx ${tx.hash})`)
  return tx.hash
}

async function deploy(
  artifacts: ArtifactSet,
  name: string,
  signer: Signer,
  args: unknown[],
): Promise<BaseContract> {
  const { abi, bytecode } = artifact(artifacts, name)
  const contract = await new ContractFactory(abi as never[], bytecode, signer).deploy(...args)
  await contract.waitForDeployment()
  return contract
}

/**
 * Deploys TestERC20, TestERC721 and TestERC1155 from `signer` and makes one ERC20 transfer, one
 * ERC721 transfer, one ERC1155 TransferSingle and one ERC1155 TransferBatch to `recipient`.
 * Transactions go one after another through a NonceManager (ethers' call cache can hand out a
 * stale nonce to back-to-back sends).
 */
export async function deployDemoTokens(
  signer: Signer,
  options: { recipient?: string; artifacts?: ArtifactSet } = {},
): Promise<DemoTokens> {
  const artifacts = options.artifacts ?? testTokenArtifacts()
  const recipient = options.recipient ?? DEMO_RECIPIENT
  const sender = signer instanceof NonceManager ? signer : new NonceManager(signer)
  const owner = await sender.getAddress()
  const { erc20: erc20Details, erc721: erc721Details, erc1155: erc1155Details } = DEMO_TOKEN_DETAILS

  const erc20 = await deploy(artifacts, 'TestERC20', sender, [
    erc20Details.name,
    erc20Details.symbol,
    erc20Details.decimals,
  ])
  const erc721 = await deploy(artifacts, 'TestERC721', sender, [
    erc721Details.name,
    erc721Details.symbol,
  ])
  const erc1155 = await deploy(artifacts, 'TestERC1155', sender, [erc1155Details.uri])

  const amount = 1_500_000_000_000_000_000n
  await send(erc20, 'mint', owner, amount * 10n)
  const erc20Tx = await send(erc20, 'transfer', recipient, amount)

  const tokenId = 7n
  await send(erc721, 'mint', owner, tokenId)
  const erc721Tx = await send(erc721, 'transferFrom', owner, recipient, tokenId)

  const single = { id: 1n, amount: 5n }
  const batch = { ids: [2n, 3n], amounts: [10n, 20n] }
  await send(erc1155, 'mintBatch', owner, [1n, 2n, 3n], [100n, 100n, 100n])
  const singleTx = await send(
    erc1155,
    'safeTransferFrom',
    owner,
    recipient,
    single.id,
    single.amount,
    '0x',
  )
  const batchTx = await send(
    erc1155,
    'safeBatchTransferFrom',
    owner,
    recipient,
    batch.ids,
    batch.amounts,
    '0x',
  )

  return {
    recipient,
    erc20: { address: await erc20.getAddress(), transferTx: erc20Tx, amount },
    erc721: { address: await erc721.getAddress(), transferTx: erc721Tx, tokenId },
    erc1155: {
      address: await erc1155.getAddress(),
      transferSingleTx: singleTx,
      transferBatchTx: batchTx,
      single,
      batch,
    },
  }
}
