import {
  ContractFactory,
  Transaction,
  Wallet,
  keccak256,
  parseEther,
  parseUnits,
  toBeHex,
  type BaseContract,
  type TransactionReceipt,
} from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { artifact, type ArtifactSet } from '../../src/chain/artifacts.ts'
import {
  createBlockchainSource,
  type BlockchainSource,
} from '../../src/feeds/server/blockchain/index.ts'
import { testTokenArtifacts } from '../../src/feeds/server/blockchain/demo-tokens.ts'
import { expectCatalogShape } from './blockchain/catalog.ts'
import { feedError, startTestChain, type TestChain } from './blockchain/chain.ts'

// The `transaction` record answered live from anvil, checked field by field against what the node
// itself reports (eth_getTransactionByHash / eth_getTransactionReceipt) and against the catalog.

let chain: TestChain
let source: BlockchainSource
let artifacts: ArtifactSet
const recipient = Wallet.createRandom().address

beforeAll(async () => {
  // Compiled here, not in a test: a cold compile takes a while on a busy machine.
  artifacts = testTokenArtifacts()
  chain = await startTestChain()
  source = createBlockchainSource({ chains: { local: chain.anvil.rpcUrl } })
})

afterAll(async () => {
  await source?.close()
  await chain?.stop()
})

/** The node's own JSON of a transaction, to compare with what ethers made of it. */
async function nodeTransaction(hash: string): Promise<Record<string, string>> {
  return chain.provider.send('eth_getTransactionByHash', [hash]) as Promise<Record<string, string>>
}

async function mined(hash: string): Promise<TransactionReceipt> {
  const receipt = await chain.provider.waitForTransaction(hash)
  if (receipt === null) throw new Error(`no receipt for ${hash}`)
  return receipt
}

async function record(hash: string): Promise<Record<string, unknown>> {
  const data = await source.transaction({ blockchain: 'local', hash })
  expectCatalogShape('transaction', data)
  return data
}

function expectRawMatches(data: Record<string, unknown>, from: string): void {
  const raw = data.raw as string
  expect(raw).toMatch(/^0x[0-9a-f]+$/)
  expect(keccak256(raw)).toBe(data.hash)
  expect(Transaction.from(raw).from?.toLowerCase()).toBe(from.toLowerCase())
}

describe('transaction record from a live node', () => {
  it('describes a plain legacy ETH transfer like the Amberdata sample', async () => {
    const sent = await chain.signer.sendTransaction({
      to: recipient,
      value: parseEther('0.25'),
      type: 0,
      gasPrice: parseUnits('3', 'gwei'),
    })
    const receipt = await mined(sent.hash)
    const block = await chain.provider.getBlock(receipt.blockNumber)
    const node = await nodeTransaction(sent.hash)
    const data = await record(sent.hash)

    expect(data).toMatchObject({
      blockNumber: String(receipt.blockNumber),
      blockHash: receipt.blockHash,
      confirmations: '1',
      contractAddress: 'null',
      cumulativeGasUsed: receipt.cumulativeGasUsed.toString(),
      fee: (receipt.gasUsed * receipt.gasPrice).toString(),
      from: [{ address: chain.address.toLowerCase() }],
      gasLimit: BigInt(node.gas as string).toString(),
      gasPrice: parseUnits('3', 'gwei').toString(),
      gasUsed: '21000',
      hash: sent.hash,
      index: receipt.index,
      input: '0x',
      logsBloom: receipt.logsBloom,
      maxFeePerGas: null,
      maxPriorityFeePerGas: null,
      nonce: String(sent.nonce),
      publicKey: '',
      // The node drops leading zeros of r and s; the record keeps them as 32-byte words, like Amberdata.
      r: toBeHex(BigInt(node.r as string), 32),
      s: toBeHex(BigInt(node.s as string), 32),
      root: '',
      status: '0x1',
      timestamp: new Date((block?.timestamp ?? 0) * 1000).toISOString(),
      to: [{ address: recipient.toLowerCase() }],
      type: '0',
      value: parseEther('0.25').toString(),
      statusResult: { code: '0x1', confirmed: true, success: true, name: 'successful' },
    })
    // EIP-155: v = chainId * 2 + 35 + yParity, exactly what the node reports.
    expect(data.v).toBe(BigInt(node.v as string).toString())
    expect([String(31337 * 2 + 35), String(31337 * 2 + 36)]).toContain(data.v)
    expectRawMatches(data, chain.address)
    expect(data.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/)
  })

  it('counts confirmations from the head, the block itself being the first', async () => {
    const sent = await chain.signer.sendTransaction({ to: recipient, value: 1n })
    await mined(sent.hash)
    expect((await record(sent.hash)).confirmations).toBe('1')
    await chain.provider.send('anvil_mine', ['0x3'])
    expect((await record(sent.hash)).confirmations).toBe('4')
  })

  it('describes an EIP-1559 transaction: type "2", v = y parity, fee caps as numbers, effective gas price', async () => {
    const maxFeePerGas = parseUnits('7', 'gwei')
    const maxPriorityFeePerGas = parseUnits('2', 'gwei')
    const sent = await chain.signer.sendTransaction({
      to: recipient,
      value: 5n,
      type: 2,
      maxFeePerGas,
      maxPriorityFeePerGas,
    })
    const receipt = await mined(sent.hash)
    const node = await nodeTransaction(sent.hash)
    const data = await record(sent.hash)

    expect(data.type).toBe('2')
    expect(['0', '1']).toContain(data.v)
    expect(data.v).toBe(BigInt(node.yParity ?? (node.v as string)).toString())
    expect(data.maxFeePerGas).toBe(Number(maxFeePerGas))
    expect(data.maxPriorityFeePerGas).toBe(Number(maxPriorityFeePerGas))
    // What was paid per gas: base fee + tip, below the cap.
    expect(data.gasPrice).toBe(receipt.gasPrice.toString())
    expect(BigInt(data.gasPrice as string)).toBeLessThanOrEqual(maxFeePerGas)
    expect(data.fee).toBe(receipt.fee.toString())
    expectRawMatches(data, chain.address)
  })

  it('describes an EIP-2930 transaction (type "1") and rebuilds its raw form with the access list', async () => {
    const sent = await chain.signer.sendTransaction({
      to: recipient,
      value: 9n,
      type: 1,
      gasPrice: parseUnits('4', 'gwei'),
      accessList: [{ address: recipient, storageKeys: [`0x${'00'.repeat(31)}01`] }],
    })
    await mined(sent.hash)
    const data = await record(sent.hash)
    expect(data.type).toBe('1')
    expect(['0', '1']).toContain(data.v)
    expect(data.maxFeePerGas).toBeNull()
    expectRawMatches(data, chain.address)
  })

  it('describes a contract creation: to [{address: "null"}], contractAddress set', async () => {
    const { abi, bytecode } = artifact(artifacts, 'TestERC20')
    const contract = (await new ContractFactory(abi as never[], bytecode, chain.signer).deploy(
      'Creation',
      'CRT',
      6,
    )) as BaseContract
    await contract.waitForDeployment()
    const hash = contract.deploymentTransaction()?.hash as string
    const data = await record(hash)

    expect(data.to).toEqual([{ address: 'null' }])
    expect(data.contractAddress).toBe((await contract.getAddress()).toLowerCase())
    expect(data.input).toMatch(new RegExp(`^${bytecode}`))
    expect(data.statusResult).toEqual({
      code: '0x1',
      confirmed: true,
      success: true,
      name: 'successful',
    })
    expectRawMatches(data, chain.address)
  })

  it('describes a failed transaction: status 0x0, statusResult failed, the fee still paid', async () => {
    const { abi, bytecode } = artifact(artifacts, 'TestERC20')
    const token = (await new ContractFactory(abi as never[], bytecode, chain.signer).deploy(
      'Broke',
      'BRK',
      18,
    )) as BaseContract
    await token.waitForDeployment()
    // Nothing was minted: the transfer reverts. A fixed gas limit skips estimation, so it is mined.
    const sent = await chain.signer.sendTransaction({
      to: await token.getAddress(),
      data: token.interface.encodeFunctionData('transfer', [recipient, 1n]),
      gasLimit: 100_000n,
    })
    const receipt = await mined(sent.hash).catch(() =>
      chain.provider.getTransactionReceipt(sent.hash),
    )
    expect(receipt?.status).toBe(0)
    const data = await record(sent.hash)

    expect(data.status).toBe('0x0')
    expect(data.statusResult).toEqual({
      code: '0x0',
      confirmed: true,
      success: false,
      name: 'failed',
    })
    expect(data.gasLimit).toBe('100000')
    expect(BigInt(data.fee as string)).toBeGreaterThan(0n)
    expect(data.fee).toBe(receipt?.fee.toString())
  })

  it('answers a pending transaction (no receipt yet) with statusResult pending and no block fields', async () => {
    await chain.provider.send('evm_setAutomine', [false])
    try {
      const sent = await chain.signer.sendTransaction({ to: recipient, value: 3n, type: 2 })
      const data = await source.transaction({ blockchain: 'local', hash: sent.hash })
      expect(data).toMatchObject({
        blockNumber: null,
        blockHash: null,
        confirmations: '0',
        hash: sent.hash,
        status: null,
        type: '2',
        value: '3',
        from: [{ address: chain.address.toLowerCase() }],
        statusResult: { code: null, confirmed: false, success: null, name: 'pending' },
      })
      expectRawMatches(data, chain.address)
      const transfers = await feedError(
        source.tokenTransfers({ blockchain: 'local', hash: sent.hash }),
      )
      expect(transfers.status).toBe(404)
      expect(transfers.description).toMatch(/pending/)

      await chain.provider.send('evm_mine', [])
      expect((await record(sent.hash)).statusResult).toMatchObject({
        name: 'successful',
        confirmed: true,
      })
    } finally {
      await chain.provider.send('evm_setAutomine', [true])
    }
  })

  it('answers 404 for a transaction the node does not know', async () => {
    const hash = keccak256('0x1234')
    const error = await feedError(source.transaction({ blockchain: 'local', hash }))
    expect(error.status).toBe(404)
    expect(error.description).toContain(hash)
    expect(error.description).toContain("'local'")
  })
})
