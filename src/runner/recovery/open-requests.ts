import type { JsonRpcProvider } from 'ethers'

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
