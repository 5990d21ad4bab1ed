import type { JsonRpcProvider } from 'ethers'
import { ORACLE_RESPONSE_TOPIC } from '../../chain/operator.ts'
import { readLogsInRanges } from '../../chain/operator-logs.ts'

/** Operator.EXPIRYTIME: a request may be cancelled by its requester this long after it was made. */
export const OPERATOR_EXPIRY_SECONDS = 5 * 60

/**
 * The first block whose requests may still be open: every request made before it is past its
 * `cancelExpiration` (block time + EXPIRYTIME). Found by bisecting block timestamps, so it costs
 * about log2(head) block reads however many blocks the window spans.
 */
export async function openWindowStart(
  provider: JsonRpcProvider,
  expirySeconds = OPERATOR_EXPIRY_SECONDS,
): Promise<{ fromBlock: number; head: number; headTimestamp: number }> {
  const headBlock = await provider.getBlock('latest')
  if (!headBlock) throw new Error('the node answered no latest block')
  const since = headBlock.timestamp - expirySeconds
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

/** Request ids the Operators answered (`OracleResponse`) between `fromBlock` and `toBlock`. */
export async function answeredRequestIds(
  provider: JsonRpcProvider,
  operators: readonly string[],
  fromBlock: number,
  toBlock: number,
  rangeBlocks?: number,
): Promise<Set<string>> {
  const logs = await readLogsInRanges(provider, {
    address: operators,
    topics: [ORACLE_RESPONSE_TOPIC],
    fromBlock,
    toBlock,
    rangeBlocks,
  })
  return new Set(logs.flatMap((log) => (log.topics[1] ? [log.topics[1].toLowerCase()] : [])))
}
