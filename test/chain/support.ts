import {
  AbiCoder,
  Contract,
  Interface,
  Wallet,
  type InterfaceAbi,
  type JsonRpcApiProvider,
  type Log,
} from 'ethers'
import { artifact } from '../../src/chain/artifacts.ts'
import {
  decodeOperatorLog,
  encodeFulfillOracleRequest2,
  type OracleRequestEvent,
} from '../../src/chain/operator.ts'
import { startAnvil, type Anvil, type AnvilOptions } from '../../src/dev/anvil.ts'
import { startPoolBackstop } from '../../src/dev/pool-backstop.ts'
import { deployDevContracts, type DevContracts } from '../../src/dev/deploy.ts'

/** FeedConsumer.ValueType, in the contract's order. */
export const ValueType = {
  Uint256: 0,
  Int256: 1,
  Bool: 2,
  String: 3,
  Bytes32: 4,
  Bytes: 5,
} as const

export const TEST_SPEC_ID = '0x' + Buffer.from('0eec7e1dd0d2476ca1a872dfb6633f47').toString('hex')
export const PAYMENT = 10n ** 17n

export interface TestChain {
  anvil: Anvil
  dev: DevContracts
  consumerInterface: Interface
  stop(): Promise<void>
}

export interface TestChainOptions {
  /**
   * Mine what anvil's automine leaves ready in its pool (src/dev/pool-backstop.ts), as the dev stack
   * does: without it, transactions sent at once from several connections can wait there for an
   * arrival that never comes (a 40-transaction, two-key test hung until its timeout twice).
   */
  poolBackstop?: boolean
}

export async function startTestChain(
  options: AnvilOptions = {},
  nodeKeys?: readonly string[],
  { poolBackstop = false }: TestChainOptions = {},
): Promise<TestChain> {
  const anvil = await startAnvil(options)
  try {
    const dev = await deployDevContracts(anvil.rpcUrl, nodeKeys ? { nodeKeys } : {})
    const consumerInterface = new Interface(
      artifact(dev.artifacts, 'FeedConsumer').abi as InterfaceAbi,
    )
    const backstop = poolBackstop ? startPoolBackstop(anvil.rpcUrl) : undefined
    return {
      anvil,
      dev,
      consumerInterface,
      async stop() {
        backstop?.stop()
        dev.provider.destroy()
        await anvil.stop()
      },
    }
  } catch (error) {
    await anvil.stop()
    throw error
  }
}

export async function rpc<T>(
  provider: JsonRpcApiProvider,
  method: string,
  params: unknown[] = [],
): Promise<T> {
  return (await provider.send(method, params)) as T
}

interface RawReceipt {
  status: string
  blockNumber: string
  logs: Array<{
    address: string
    topics: string[]
    data: string
    blockNumber: string
    blockHash: string
    transactionHash: string
    logIndex: string
  }>
}

/**
 * Waits for a receipt by polling (no ethers caching, no event subscription). With `raw`, the signed
 * bytes, a transaction anvil no longer knows is sent again, at most once a second: a loaded anvil can
 * lose one from its pool (src/dev/pool-backstop.ts). On a timeout the error says whether anvil still
 * holds the transaction.
 */
export async function receiptOf(
  provider: JsonRpcApiProvider,
  hash: string,
  timeoutMs = 20_000,
  raw?: string,
): Promise<RawReceipt> {
  const deadline = Date.now() + timeoutMs
  const known = async () => !!(await rpc<unknown>(provider, 'eth_getTransactionByHash', [hash]))
  let lookedAt = Date.now()
  for (;;) {
    const receipt = await rpc<RawReceipt | null>(provider, 'eth_getTransactionReceipt', [hash])
    if (receipt) return receipt
    if (Date.now() > deadline)
      throw new Error(
        `no receipt for ${hash} within ${timeoutMs} ms (anvil ${(await known()) ? 'holds it unmined' : 'does not know it'})`,
      )
    if (raw !== undefined && Date.now() - lookedAt >= 1_000) {
      lookedAt = Date.now()
      if (!(await known())) await rpc(provider, 'eth_sendRawTransaction', [raw]).catch(() => {})
    }
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 20))
  }
}

/**
 * Makes `count` FeedConsumer requests fast: transactions signed locally with explicit nonces and sent
 * together, the way a load generator would. Returns the decoded OracleRequest of each, in order.
 */
export interface RequestOptions {
  specId?: string
  valueType?: number
  keys?: string[]
  values?: string[]
  consumer?: string
  signer?: Wallet
}

export async function makeRequests(
  chain: TestChain,
  count: number,
  options: RequestOptions = {},
): Promise<OracleRequestEvent[]> {
  const {
    specId = TEST_SPEC_ID,
    valueType = ValueType.Uint256,
    keys = ['endpoint'],
    values = ['game-odds'],
    consumer = chain.dev.addresses.consumer,
    signer = chain.dev.deployer,
  } = options
  const provider = chain.dev.provider
  const wallet = new Wallet(signer.privateKey)
  const data = chain.consumerInterface.encodeFunctionData('requestData', [
    specId,
    PAYMENT,
    valueType,
    keys,
    values,
  ])
  const nonce = Number(
    await rpc<string>(provider, 'eth_getTransactionCount', [wallet.address, 'pending']),
  )
  const block = await rpc<{ baseFeePerGas: string }>(provider, 'eth_getBlockByNumber', [
    'latest',
    false,
  ])
  const maxFeePerGas = BigInt(block.baseFeePerGas) * 3n + 10n ** 9n
  const raws = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      wallet.signTransaction({
        type: 2,
        chainId: chain.dev.chainId,
        nonce: nonce + i,
        to: consumer,
        data,
        gasLimit: 600_000,
        maxFeePerGas,
        maxPriorityFeePerGas: 10n ** 9n,
      }),
    ),
  )
  const hashes: string[] = []
  for (const raw of raws) hashes.push(await rpc<string>(provider, 'eth_sendRawTransaction', [raw]))
  // A bound that only catches hangs: 200 requests on a loaded machine take seconds.
  const receipts = await Promise.all(
    hashes.map((hash, i) => receiptOf(provider, hash, 60_000, raws[i])),
  )
  return receipts.map((receipt, i) => {
    if (receipt.status !== '0x1') throw new Error(`request ${i} reverted`)
    const event = receipt.logs
      .map((log) => decodeOperatorLog(toLog(log), chain.dev.chainId))
      .find((decoded): decoded is OracleRequestEvent => decoded?.kind === 'request')
    if (!event) throw new Error(`request ${i} emitted no OracleRequest`)
    return event
  })
}

function toLog(raw: RawReceipt['logs'][number]): Log {
  return {
    address: raw.address,
    topics: raw.topics,
    data: raw.data,
    blockNumber: Number(raw.blockNumber),
    blockHash: raw.blockHash,
    transactionHash: raw.transactionHash,
    index: Number(raw.logIndex),
    removed: false,
  } as unknown as Log
}

/** `fulfillOracleRequest2` calldata answering a uint256 request with `value`. */
export function fulfilUint256(event: OracleRequestEvent, value: bigint): string {
  return encodeFulfillOracleRequest2(
    event,
    AbiCoder.defaultAbiCoder().encode(['bytes32', 'uint256'], [event.requestId, value]),
  )
}

export function consumerAt(chain: TestChain, address = chain.dev.addresses.consumer): Contract {
  return new Contract(address, chain.consumerInterface, chain.dev.provider)
}
