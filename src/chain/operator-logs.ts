import type { Log, Provider } from 'ethers'

/** CHAIN_LOG_RANGE_BLOCKS' default: public nodes refuse `eth_getLogs` over much wider ranges. */
export const DEFAULT_LOG_RANGE_BLOCKS = 2_000

/** What the paged reader asks of a node: its logs, and its head to bound a read that runs to it. */
export type LogSource = Pick<Provider, 'getLogs' | 'getBlockNumber'>

export interface LogQuery {
  address: readonly string[]
  topics: ReadonlyArray<string | readonly string[] | null>
  fromBlock: number
  /** The last block read, included. */
  toBlock: number
  /** The widest range asked at once (CHAIN_LOG_RANGE_BLOCKS). */
  rangeBlocks?: number
}

/**
 * Logs between two blocks (both included), read in ranges of at most `rangeBlocks`, oldest first.
 * Every read of the Operator's logs goes through here, so none asks a node for more blocks than it
 * serves at once, and none runs open-ended to whatever head the node has when it answers.
 */
export async function readLogsInRanges(provider: LogSource, query: LogQuery): Promise<Log[]> {
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
