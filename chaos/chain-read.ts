import { AbiCoder, Interface, type Log } from 'ethers'
import {
  CANCEL_ORACLE_REQUEST_TOPIC,
  ORACLE_REQUEST_TOPIC,
  ORACLE_RESPONSE_TOPIC,
  operatorInterface,
} from '../src/chain/operator.ts'
import { rpc, rpcMany, type RpcCall } from './rpc.ts'

const consumerEvents = new Interface([
  'event RequestFulfilled(bytes32 indexed requestId, uint8 valueType, bytes value)',
])
const REQUEST_FULFILLED_TOPIC = consumerEvents.getEvent('RequestFulfilled')!.topicHash

/** A log of the canonical chain: which request, which transaction, which block. */
export interface ChainEvent {
  requestId: string
  txHash: string
  block: number
}

export interface ChainRequestLog extends ChainEvent {
  cancelExpiration: bigint
  /** The contract that made the request (lower case): its consumer, the only one that may cancel it. */
  requester: string
}

/** What the Operator and the consumers say, read from anvil itself (never through the proxy). */
export interface OperatorLogs {
  requests: ChainRequestLog[]
  responses: ChainEvent[]
  cancels: ChainEvent[]
  /** The value each request's consumer stored for it when answered (uint256 answers). */
  values: Map<string, bigint>
}

interface RawLog {
  topics: string[]
  data: string
  transactionHash: string
  blockNumber: string
}

async function logsOf(
  anvilUrl: string,
  address: string | readonly string[],
  topic: string,
): Promise<RawLog[]> {
  return rpc<RawLog[]>(anvilUrl, 'eth_getLogs', [
    { address, topics: [topic], fromBlock: '0x0', toBlock: 'latest' },
  ])
}

function eventOf(log: RawLog, requestId: string): ChainEvent {
  return {
    requestId: requestId.toLowerCase(),
    txHash: log.transactionHash.toLowerCase(),
    block: Number(log.blockNumber),
  }
}

/**
 * The Operator's request, answer and cancel logs, and the answers the requests' consumers stored:
 * `consumer` and every other contract a request names as its requester.
 */
export async function readOperatorLogs(
  anvilUrl: string,
  operator: string,
  consumer: string,
): Promise<OperatorLogs> {
  const [requestLogs, responseLogs, cancelLogs] = await Promise.all([
    logsOf(anvilUrl, operator, ORACLE_REQUEST_TOPIC),
    logsOf(anvilUrl, operator, ORACLE_RESPONSE_TOPIC),
    logsOf(anvilUrl, operator, CANCEL_ORACLE_REQUEST_TOPIC),
  ])
  const requests = requestLogs.map((log) => {
    const parsed = operatorInterface.parseLog(log as unknown as Log)!
    return {
      ...eventOf(log, String(parsed.args.requestId)),
      cancelExpiration: BigInt(parsed.args.cancelExpiration as bigint),
      requester: String(parsed.args.requester).toLowerCase(),
    }
  })
  const consumers = [...new Set([consumer.toLowerCase(), ...requests.map((r) => r.requester)])]
  const values = new Map<string, bigint>()
  for (const log of await logsOf(anvilUrl, consumers, REQUEST_FULFILLED_TOPIC)) {
    const parsed = consumerEvents.parseLog(log as unknown as Log)!
    const [value] = AbiCoder.defaultAbiCoder().decode(['uint256'], String(parsed.args.value))
    values.set(String(parsed.args.requestId).toLowerCase(), BigInt(value as bigint))
  }
  return {
    requests,
    responses: responseLogs.map((log) => eventOf(log, log.topics[1]!)),
    cancels: cancelLogs.map((log) => eventOf(log, log.topics[1]!)),
    values,
  }
}

/**
 * Each block's timestamp with the clock jumps taken out (seconds): evm_increaseTime moves every later
 * block's time ahead, so a gap of over a minute between two blocks (they come every second or two)
 * is a jump, and the time of a block is told as if it had not happened. The Operator's expiry
 * (cancelExpiration = the request block's time + 5 minutes) is compared on that scale.
 */
export async function blockTimes(anvilUrl: string): Promise<{ raw: number[]; unwarped: number[] }> {
  const head = Number(await rpc<string>(anvilUrl, 'eth_blockNumber'))
  const calls = Array.from({ length: head + 1 }, (_, number): RpcCall => [
    'eth_getBlockByNumber',
    [`0x${number.toString(16)}`, false],
  ])
  const stamps = (await rpcMany(anvilUrl, calls)).map((outcome) => {
    if (!outcome.ok) throw new Error(outcome.message)
    return Number((outcome.result as { timestamp: string }).timestamp)
  })
  return { raw: stamps, unwarped: unwarp(stamps) }
}

/** A jump is a gap longer than this between consecutive blocks. */
const JUMP_SECONDS = 60

export function unwarp(stamps: readonly number[]): number[] {
  let jumped = 0
  return stamps.map((stamp, index) => {
    const gap = index === 0 ? 0 : stamp - stamps[index - 1]!
    if (gap > JUMP_SECONDS) jumped += gap - 1
    return stamp - jumped
  })
}

/** A transaction's sender and nonce, as the node has it. */
export async function sendersOf(
  anvilUrl: string,
  hashes: readonly string[],
): Promise<Map<string, { from: string; nonce: number }>> {
  const txs = await resultsOf<{ from: string; nonce: string }>(
    anvilUrl,
    'eth_getTransactionByHash',
    hashes,
  )
  const senders = new Map<string, { from: string; nonce: number }>()
  for (const [hash, tx] of txs)
    senders.set(hash, { from: tx.from.toLowerCase(), nonce: Number(tx.nonce) })
  return senders
}

/** What `method` answers for each hash, where it answers something (not null, not an error). */
async function resultsOf<T>(
  anvilUrl: string,
  method: string,
  hashes: readonly string[],
): Promise<Map<string, T>> {
  const outcomes = await rpcMany(
    anvilUrl,
    hashes.map((hash) => [method, [hash]] as const),
  )
  const results = new Map<string, T>()
  outcomes.forEach((outcome, index) => {
    if (outcome.ok && outcome.result !== null) results.set(hashes[index]!, outcome.result as T)
  })
  return results
}

/** A key as the node sees it: mined count, pending count, and its transactions in the pool. */
export interface KeyState {
  address: string
  latest: number
  pending: number
  inPool: number
}

interface PoolContent {
  pending: Record<string, Record<string, unknown>>
  queued: Record<string, Record<string, unknown>>
}

export async function keyStates(
  anvilUrl: string,
  addresses: readonly string[],
): Promise<KeyState[]> {
  const pool = await rpc<PoolContent>(anvilUrl, 'txpool_content')
  const inPool = (address: string) =>
    [pool.pending, pool.queued]
      .flatMap((section) =>
        Object.entries(section).filter(([from]) => from.toLowerCase() === address.toLowerCase()),
      )
      .reduce((sum, [, byNonce]) => sum + Object.keys(byNonce).length, 0)
  return Promise.all(
    addresses.map(async (address) => ({
      address: address.toLowerCase(),
      latest: Number(await rpc<string>(anvilUrl, 'eth_getTransactionCount', [address, 'latest'])),
      pending: Number(await rpc<string>(anvilUrl, 'eth_getTransactionCount', [address, 'pending'])),
      inPool: inPool(address),
    })),
  )
}

/** The receipts of `hashes` that the chain has: block and status. */
export async function fatesOf(
  anvilUrl: string,
  hashes: readonly string[],
): Promise<Map<string, { block: number; reverted: boolean }>> {
  const receipts = await resultsOf<{ blockNumber: string; status: string }>(
    anvilUrl,
    'eth_getTransactionReceipt',
    hashes,
  )
  const fates = new Map<string, { block: number; reverted: boolean }>()
  for (const [hash, receipt] of receipts)
    fates.set(hash, { block: Number(receipt.blockNumber), reverted: Number(receipt.status) !== 1 })
  return fates
}
