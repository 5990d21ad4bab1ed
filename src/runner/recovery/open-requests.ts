import type { JsonRpcProvider } from 'ethers'
import { ORACLE_RESPONSE_TOPIC } from '../../chain/operator.ts'

/** Operator.EXPIRYTIME: a request may be cancelled by its requester this long after it was made. */
export const OPERATOR_EXPIRY_SECONDS = 5 * 60

/** Widest `eth_getLogs` range asked at once (public nodes refuse wider ones). */
const LOG_RANGE = 2_000

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
): Promise<Set<string>> {
  const answered = new Set<string>()
  for (let from = fromBlock; from <= toBlock; from += LOG_RANGE) {
    const logs = await provider.getLogs({
      address: [...operators],
      topics: [ORACLE_RESPONSE_TOPIC],
      fromBlock: from,
      toBlock: Math.min(toBlock, from + LOG_RANGE - 1),
    })
    for (const log of logs) if (log.topics[1]) answered.add(log.topics[1].toLowerCase())
  }
  return answered
}

/**
 * Resolves once none of `addresses` has a transaction waiting in the node's pool (its pending count
 * equals its mined count), or after `boundMs`: a fulfilment sent before Redis was lost is mined, and
 * found closed, before its request is looked at again.
 */
export async function waitForPoolsToDrain(
  provider: JsonRpcProvider,
  addresses: readonly string[],
  boundMs: number,
  pollMs = 250,
): Promise<{ drained: boolean }> {
  const until = Date.now() + boundMs
  for (;;) {
    const counts = await Promise.all(
      addresses.map(async (address) => {
        const [pending, latest] = await Promise.all([
          provider.send('eth_getTransactionCount', [address, 'pending']),
          provider.send('eth_getTransactionCount', [address, 'latest']),
        ])
        return Number(pending) - Number(latest)
      }),
    )
    if (counts.every((waiting) => waiting <= 0)) return { drained: true }
    if (Date.now() >= until) return { drained: false }
    await new Promise((resolve) => setTimeout(resolve, pollMs))
  }
}
