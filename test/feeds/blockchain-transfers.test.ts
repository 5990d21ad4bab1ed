import {
  ContractFactory,
  Interface,
  Wallet,
  keccak256,
  parseEther,
  type BaseContract,
  type TransactionReceipt,
} from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { artifact, type ArtifactSet } from '../../src/chain/artifacts.ts'
import {
  DEMO_TOKEN_DETAILS,
  deployDemoTokens,
  testTokenArtifacts,
  type DemoTokens,
} from '../../src/feeds/server/blockchain/demo-tokens.ts'
import {
  createBlockchainSource,
  type BlockchainSource,
} from '../../src/feeds/server/blockchain/index.ts'
import { detectInterfaces } from '../../src/feeds/server/blockchain/token-standards.ts'
import { expectCatalogShape } from './blockchain/catalog.ts'
import {
  feedError,
  installErc1820Registry,
  startTestChain,
  type TestChain,
} from './blockchain/chain.ts'

// `token-transfers` decoded from real ERC20, ERC721 and ERC1155 contracts (OpenZeppelin 4.8.3) on
// anvil, through deployDemoTokens, the helper the dev stack uses.

let chain: TestChain
let source: BlockchainSource
let demo: DemoTokens
let artifacts: ArtifactSet
const recipient = '0x000000000000000000000000000000000000dead'

beforeAll(async () => {
  chain = await startTestChain()
  source = createBlockchainSource({ chains: { local: chain.anvil.rpcUrl } })
  artifacts = testTokenArtifacts()
  demo = await deployDemoTokens(chain.signer, { artifacts })
})

afterAll(async () => {
  await source?.close()
  await chain?.stop()
})

async function transfers(hash: string): Promise<Record<string, unknown>> {
  const data = await source.tokenTransfers({ blockchain: 'local', hash })
  expectCatalogShape('token-transfers', data)
  return data
}

async function receipt(hash: string): Promise<TransactionReceipt> {
  const found = await chain.provider.getTransactionReceipt(hash)
  if (found === null) throw new Error(`no receipt for ${hash}`)
  return found
}

const noStandards = {
  isERC20: false,
  isERC721: false,
  isERC777: false,
  isERC884: false,
  isERC998: false,
  isERC1155: false,
}

describe('token transfers from a live node', () => {
  it('decodes an ERC20 Transfer with the token name, symbol and decimals read from the contract', async () => {
    const data = await transfers(demo.erc20.transferTx)
    const [log] = (await receipt(demo.erc20.transferTx)).logs
    expect(data).toMatchObject({
      ...noStandards,
      amount: demo.erc20.amount.toString(),
      from: chain.address.toLowerCase(),
      to: recipient,
      logIndex: log?.index,
      tokenAddress: demo.erc20.address.toLowerCase(),
      decimals: '18',
      name: DEMO_TOKEN_DETAILS.erc20.name,
      symbol: DEMO_TOKEN_DETAILS.erc20.symbol,
      isERC20: true,
      tokenId: null,
    })
    expect(typeof data.logIndex).toBe('number')
    expect(data.transfers).toHaveLength(1)
  })

  it('decodes an ERC721 Transfer: amount is the token id, decimals "0" (the contract has none), isERC721 from the log and ERC165', async () => {
    const data = await transfers(demo.erc721.transferTx)
    expect(data).toMatchObject({
      ...noStandards,
      amount: demo.erc721.tokenId.toString(),
      tokenId: demo.erc721.tokenId.toString(),
      from: chain.address.toLowerCase(),
      to: recipient,
      tokenAddress: demo.erc721.address.toLowerCase(),
      decimals: '0',
      name: DEMO_TOKEN_DETAILS.erc721.name,
      symbol: DEMO_TOKEN_DETAILS.erc721.symbol,
      isERC721: true,
    })
  })

  it('decodes an ERC1155 TransferSingle: amount and token id, no name/symbol (the standard has none)', async () => {
    const data = await transfers(demo.erc1155.transferSingleTx)
    expect(data).toMatchObject({
      ...noStandards,
      amount: demo.erc1155.single.amount.toString(),
      tokenId: demo.erc1155.single.id.toString(),
      from: chain.address.toLowerCase(),
      to: recipient,
      tokenAddress: demo.erc1155.address.toLowerCase(),
      decimals: '0',
      name: '',
      symbol: '',
      isERC1155: true,
    })
  })

  it('decodes an ERC1155 TransferBatch: the first entry as data, every entry in transfers', async () => {
    const data = await transfers(demo.erc1155.transferBatchTx)
    const { ids, amounts } = demo.erc1155.batch
    expect(data).toMatchObject({
      amount: amounts[0]?.toString(),
      tokenId: ids[0]?.toString(),
      isERC1155: true,
      isERC20: false,
    })
    const all = data.transfers as Array<Record<string, unknown>>
    expect(all.map((transfer) => [transfer.tokenId, transfer.amount])).toEqual(
      ids.map((id, i) => [id.toString(), amounts[i]?.toString()]),
    )
    for (const transfer of all) expectCatalogShape('token-transfers', transfer)
  })

  it('decodes a mint (from the zero address) of several ERC1155 ids: the first as data, all in transfers', async () => {
    const { abi, bytecode } = artifact(artifacts, 'TestERC1155')
    const token = (await new ContractFactory(abi as never[], bytecode, chain.signer).deploy(
      '',
    )) as BaseContract
    await token.waitForDeployment()
    const tx = await token.getFunction('mintBatch')(chain.address, [11n, 12n, 13n], [1n, 2n, 3n])
    await tx.wait()
    const data = await transfers(tx.hash as string)
    expect(data).toMatchObject({
      from: '0x0000000000000000000000000000000000000000',
      to: chain.address.toLowerCase(),
      tokenId: '11',
      amount: '1',
    })
    expect((data.transfers as unknown[]).length).toBe(3)
  })

  it('flags an ERC777 token (registered in the ERC1820 registry) and its ERC20-compatible Transfer', async () => {
    // Before a registry exists on the chain, no token can be ERC777.
    expect((await transfers(demo.erc20.transferTx)).isERC777).toBe(false)
    await installErc1820Registry(chain, artifacts)
    const { abi, bytecode } = artifact(artifacts, 'TestERC777')
    const token = (await new ContractFactory(abi as never[], bytecode, chain.signer).deploy(
      'Seven',
      'SVN',
    )) as BaseContract
    await token.waitForDeployment()
    await (await token.getFunction('mint')(chain.address, 1_000n)).wait()
    const tx = await token.getFunction('transfer')(recipient, 250n)
    await tx.wait()

    const data = await transfers(tx.hash as string)
    expect(data).toMatchObject({
      ...noStandards,
      amount: '250',
      to: recipient,
      tokenAddress: (await token.getAddress()).toLowerCase(),
      name: 'Seven',
      symbol: 'SVN',
      decimals: '18',
      isERC20: true,
      isERC777: true,
    })
    // A token that never registered stays non-ERC777 with the registry present.
    expect((await transfers(demo.erc20.transferTx)).isERC777).toBe(false)
  })

  it('follows the EIP-165 procedure: a contract that claims every interface is not taken at its word', async () => {
    const { abi, bytecode } = artifact(artifacts, 'TestClaimsEverything')
    const liar = (await new ContractFactory(
      abi as never[],
      bytecode,
      chain.signer,
    ).deploy()) as BaseContract
    await liar.waitForDeployment()
    expect(await detectInterfaces(chain.provider, await liar.getAddress())).toEqual({
      erc721: false,
      erc1155: false,
      erc777: false,
    })
    expect(await detectInterfaces(chain.provider, demo.erc721.address)).toEqual({
      erc721: true,
      erc1155: false,
      erc777: false,
    })
    expect(await detectInterfaces(chain.provider, demo.erc1155.address)).toEqual({
      erc721: false,
      erc1155: true,
      erc777: false,
    })
  })

  it('answers 404 for a transaction without a token transfer, for a failed one, and for an unknown hash', async () => {
    const plain = await chain.signer.sendTransaction({
      to: Wallet.createRandom().address,
      value: parseEther('0.01'),
    })
    await plain.wait()
    const noTransfer = await feedError(
      source.tokenTransfers({ blockchain: 'local', hash: plain.hash }),
    )
    expect(noTransfer.status).toBe(404)
    expect(noTransfer.description).toMatch(/made no token transfer/)

    const { abi } = artifact(artifacts, 'TestERC20')
    const erc20 = new Interface(abi as never[])
    const failed = await chain.signer.sendTransaction({
      to: demo.erc20.address,
      data: erc20.encodeFunctionData('transfer', [recipient, 10n ** 40n]),
      gasLimit: 100_000n,
    })
    await chain.provider.waitForTransaction(failed.hash)
    const failedError = await feedError(
      source.tokenTransfers({ blockchain: 'local', hash: failed.hash }),
    )
    expect(failedError.status).toBe(404)
    expect(failedError.description).toMatch(/failed/)

    const unknown = await feedError(
      source.tokenTransfers({ blockchain: 'local', hash: keccak256('0xbeef') }),
    )
    expect(unknown.status).toBe(404)
    expect(unknown.description).toMatch(/not found/)
  })
})
