import { AbiCoder, Interface, type Log } from 'ethers'
import {
  CANCEL_ORACLE_REQUEST_TOPIC,
  ORACLE_REQUEST_TOPIC,
  ORACLE_RESPONSE_TOPIC,
  operatorInterface,
} from '../src/chain/operator.ts'
import { rpc, rpcMany, type RpcCall } from './rpc.ts'
import { PUSHED_VALUE } from '../src/dev/pushed-value.ts'

/** Both of the Operator's fulfilments: a node key calling either answers a request. */
const fulfilmentCalls = new Interface([
  'function fulfillOracleRequest(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes32 data)',
  'function fulfillOracleRequest2(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes data)',
])

/**
 * The request a transaction's calldata fulfils (either fulfilment) and the cancelExpiration it
 * names, or undefined for any other call.
 */
export function fulfilmentOf(data: string): { requestId: string; expiration: bigint } | undefined {
  try {
    const parsed = fulfilmentCalls.parseTransaction({ data })
    if (!parsed) return undefined
    return {
      requestId: String(parsed.args.requestId).toLowerCase(),
      expiration: BigInt(parsed.args.expiration as bigint),
    }
  } catch {
    return undefined
  }
}

const consumerEvents = new Interface([
  'event RequestFulfilled(bytes32 indexed requestId, uint8 valueType, bytes value)',
])
const REQUEST_FULFILLED_TOPIC = consumerEvents.getEvent('RequestFulfilled')!.topicHash

/** A log of the canonical chain: which request, which transaction, which block, where in it. */
export interface ChainEvent {
  requestId: string
  txHash: string
  block: number
  index: number
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

export interface RawLog {
  topics: string[]
  data: string
  transactionHash: string
  blockNumber: string
  transactionIndex: string
}

export async function logsOf(
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
    index: Number(log.transactionIndex),
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

/** A fulfilment transaction from a node key, as mined: where, and whether it reverted. */
export interface MinedFulfilment {
  requestId: string
  expiration: bigint
  hash: string
  from: string
  nonce: number
  block: number
  index: number
  reverted: boolean
}

interface FullBlock {
  timestamp: string
  transactions: Array<{
    hash: string
    from: string
    to: string | null
    nonce: string
    input: string
    transactionIndex: string
  }>
}

/**
 * Every block of the chain, from the first to the head, read once: each block's timestamp with the
 * clock jumps taken out (seconds; evm_increaseTime moves every later block's time ahead, so a gap of
 * over a minute between two blocks, which come every second or two, is a jump, and a block's time is
 * told as if it had not happened: the Operator's expiry, cancelExpiration = the request block's time
 * + 5 minutes, is compared on that scale), and every transaction from one of `nodeAddresses` that
 * calls a fulfilment, with its receipt's status.
 */
export async function readBlocks(
  anvilUrl: string,
  nodeAddresses: readonly string[],
  to: { pushed?: string; aggregator?: string } = {},
): Promise<{
  raw: number[]
  unwarped: number[]
  fulfilments: MinedFulfilment[]
  pushes: MinedPush[]
  /** Every transaction from a node key to the flux aggregator, whatever it calls. */
  fluxCalls: Array<KeyCall & { reverted: boolean }>
}> {
  const head = Number(await rpc<string>(anvilUrl, 'eth_blockNumber'))
  const calls = Array.from({ length: head + 1 }, (_, number): RpcCall => [
    'eth_getBlockByNumber',
    [`0x${number.toString(16)}`, true],
  ])
  const blocks = (await rpcMany(anvilUrl, calls, 20)).map((outcome) => {
    if (!outcome.ok) throw new Error(outcome.message)
    return outcome.result as FullBlock
  })
  const keys = new Set(nodeAddresses.map((address) => address.toLowerCase()))
  const found = blocks.flatMap((block, number) =>
    block.transactions.flatMap((tx) => {
      const call = keys.has(tx.from.toLowerCase()) ? fulfilmentOf(tx.input) : undefined
      if (call === undefined) return []
      const sender = { from: tx.from.toLowerCase(), nonce: Number(tx.nonce) }
      const where = { block: number, index: Number(tx.transactionIndex) }
      return [{ ...call, hash: tx.hash.toLowerCase(), ...sender, ...where }]
    }),
  )
  const pushing = pushesTo(keyCallsTo(blocks, keys, to.pushed))
  const fluxCalls = keyCallsTo(blocks, keys, to.aggregator)
  const fates = await fatesOf(
    anvilUrl,
    [...found, ...pushing, ...fluxCalls].map((tx) => tx.hash),
  )
  const withFate = <T extends { hash: string; block: number }>(tx: T) => {
    const fate = fates.get(tx.hash)
    if (!fate) throw new Error(`anvil has no receipt for ${tx.hash}, mined in block ${tx.block}`)
    return { ...tx, reverted: fate.reverted }
  }
  const stamps = blocks.map((block) => Number(block.timestamp))
  return {
    raw: stamps,
    unwarped: unwarp(stamps),
    fulfilments: found.map(withFate),
    pushes: pushing.map(withFate),
    fluxCalls: fluxCalls.map(withFate),
  }
}

/** A cron tick's write (PushedValue's push) from a node key, as the chain mined it. */
export interface MinedPush {
  tick: number
  hash: string
  from: string
  nonce: number
  block: number
  reverted: boolean
}

/** A transaction from a node key to a contract of the schedule's, as mined (its fate aside). */
export interface KeyCall {
  hash: string
  from: string
  nonce: number
  block: number
  index: number
  input: string
}

/** Every transaction from a node key to `to` (none without one). */
function keyCallsTo(
  blocks: readonly FullBlock[],
  keys: ReadonlySet<string>,
  to: string | undefined,
): KeyCall[] {
  if (to === undefined) return []
  return blocks.flatMap((block, number) =>
    block.transactions.flatMap((tx) =>
      keys.has(tx.from.toLowerCase()) && tx.to?.toLowerCase() === to
        ? [
            {
              hash: tx.hash.toLowerCase(),
              from: tx.from.toLowerCase(),
              nonce: Number(tx.nonce),
              block: number,
              index: Number(tx.transactionIndex),
              input: tx.input,
            },
          ]
        : [],
    ),
  )
}

/** The calls that push, with the tick each writes. */
function pushesTo(calls: readonly KeyCall[]): Omit<MinedPush, 'reverted'>[] {
  return calls.flatMap(({ hash, from, nonce, block, input }) => {
    const call = PUSHED_VALUE.parseTransaction({ data: input })
    if (call?.name !== 'push') return []
    return [{ tick: Number(call.args[1]), hash, from, nonce, block }]
  })
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

/** How many transactions of `addresses` the pool holds that could be mined (not waiting on a nonce gap). */
export async function minableInPool(
  anvilUrl: string,
  addresses: readonly string[],
): Promise<number> {
  const pool = await rpc<PoolContent>(anvilUrl, 'txpool_content')
  const keys = new Set(addresses.map((address) => address.toLowerCase()))
  return Object.entries(pool.pending)
    .filter(([from]) => keys.has(from.toLowerCase()))
    .reduce((sum, [, byNonce]) => sum + Object.keys(byNonce).length, 0)
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
