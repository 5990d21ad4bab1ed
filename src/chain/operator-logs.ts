import type { JsonRpcProvider, Log } from 'ethers'
import { CANCEL_ORACLE_REQUEST_TOPIC, ORACLE_RESPONSE_TOPIC } from './operator.ts'

/** CHAIN_LOG_RANGE_BLOCKS' default: public nodes refuse `eth_getLogs` over much wider ranges. */
export const DEFAULT_LOG_RANGE_BLOCKS = 2_000

export interface LogQuery {
  address: readonly string[]
  topics: ReadonlyArray<string | readonly string[] | null>
  fromBlock: number
  toBlock: number
  /** The widest range asked at once (CHAIN_LOG_RANGE_BLOCKS). */
  rangeBlocks?: number
}

/** Logs between two blocks, read in ranges of at most `rangeBlocks`, oldest first. */
export async function readLogsInRanges(provider: JsonRpcProvider, query: LogQuery): Promise<Log[]> {
  const range = Math.max(1, query.rangeBlocks ?? DEFAULT_LOG_RANGE_BLOCKS)
  const logs: Log[] = []
  for (let from = query.fromBlock; from <= query.toBlock; from += range)
    logs.push(
      ...(await provider.getLogs({
        address: [...query.address],
        topics: query.topics.map((topic) =>
          topic === null || typeof topic === 'string' ? topic : [...topic],
        ),
        fromBlock: from,
        toBlock: Math.min(query.toBlock, from + range - 1),
      })),
    )
  return logs
}

/** How the Operator closed a request, as its logs say: answered (by which transaction) or cancelled. */
export type RequestClosure =
  { state: 'fulfilled'; txHash: string } | { state: 'cancelled'; txHash: string } | undefined

/**
 * Whether the Operator answered or cancelled `requestId` since `fromBlock` (its `OracleResponse` or
 * `CancelOracleRequest` log); undefined while it is open. Both events index the request id.
 */
export async function requestClosure(
  provider: JsonRpcProvider,
  operator: string,
  requestId: string,
  fromBlock: number,
  rangeBlocks?: number,
): Promise<RequestClosure> {
  const toBlock = await provider.getBlockNumber()
  const logs = await readLogsInRanges(provider, {
    address: [operator],
    topics: [[ORACLE_RESPONSE_TOPIC, CANCEL_ORACLE_REQUEST_TOPIC], requestId],
    fromBlock,
    toBlock,
    rangeBlocks,
  })
  const closing = logs.at(-1)
  if (!closing) return undefined
  return {
    state: closing.topics[0] === ORACLE_RESPONSE_TOPIC ? 'fulfilled' : 'cancelled',
    txHash: closing.transactionHash,
  }
}
