import type { JsonRpcProvider } from 'ethers'
import { CANCEL_ORACLE_REQUEST_TOPIC, ORACLE_RESPONSE_TOPIC } from '../../chain/operator.ts'
import { readLogsInRanges } from '../../chain/operator-logs.ts'

/**
 * How far back (chain time) a rebuild reads requests: the ones past their cancelExpiration and still
 * open get their run record again (refused, with the reason), as far back as the reconciler looks.
 */
export const REBUILD_LOOK_BACK_SECONDS = 24 * 3600

/**
 * The first block at most `seconds` old by the chain's time. Found by bisecting block timestamps, so
 * it costs about log2(head) block reads however many blocks the window spans.
 */
export async function openWindowStart(
  provider: JsonRpcProvider,
  seconds: number,
): Promise<{ fromBlock: number; head: number; headTimestamp: number }> {
  const headBlock = await provider.getBlock('latest')
  if (!headBlock) throw new Error('the node answered no latest block')
  const since = headBlock.timestamp - seconds
  let low = 0
  let high = headBlock.number
  while (low < high) {
    const middle = Math.floor((low + high) / 2)
    const block = await provider.getBlock(middle)
    if (block && block.timestamp >= since) high = middle
    else low = middle + 1
  }
  return { fromBlock: low, head: headBlock.number, headTimestamp: headBlock.timestamp }
}

/** How the chain closed a request, and by which transaction. */
export interface Closure {
  state: 'fulfilled' | 'cancelled'
  txHash: string
}

/**
 * The requests the Operators closed between `fromBlock` and `toBlock`, by request id (lower case):
 * answered (`OracleResponse`) or cancelled by their requesters (`CancelOracleRequest`).
 */
export async function closedRequests(
  provider: JsonRpcProvider,
  operators: readonly string[],
  fromBlock: number,
  toBlock: number,
  rangeBlocks?: number,
): Promise<Map<string, Closure>> {
  const logs = await readLogsInRanges(provider, {
    address: operators,
    topics: [[ORACLE_RESPONSE_TOPIC, CANCEL_ORACLE_REQUEST_TOPIC]],
    fromBlock,
    toBlock,
    rangeBlocks,
  })
  const closed = new Map<string, Closure>()
  for (const log of logs) {
    const requestId = log.topics[1]?.toLowerCase()
    if (requestId === undefined || closed.has(requestId)) continue
    const state = log.topics[0] === ORACLE_RESPONSE_TOPIC ? 'fulfilled' : 'cancelled'
    closed.set(requestId, { state, txHash: log.transactionHash })
  }
  return closed
}
