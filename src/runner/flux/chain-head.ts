import type { JsonRpcApiProvider } from 'ethers'
import { PoolProvider } from '../../chain/endpoints/pool-provider.ts'
import { headHeaderOf } from '../../chain/head-header.ts'
import { FeedrunnerError } from '../../config/errors.ts'

/**
 * The chain's head block (its number and time). Through a pool, its one shared read
 * (EndpointPool.latestHeader): the listener's read or newHeads notification answers the monitor's
 * look too, and no read is made before the chain's next block is due, so a tick shorter than a block
 * asks nothing. Otherwise asked.
 */
export async function latestHead(
  provider: JsonRpcApiProvider,
): Promise<{ number: number; timestamp: number }> {
  if (!(provider instanceof PoolProvider)) {
    const block = await provider.getBlock('latest')
    if (!block) throw new FeedrunnerError('the node has no latest block', { kind: 'unavailable' })
    return block
  }
  const raw = (await provider.latestHeader()) as { timestamp?: unknown } | null
  const header = headHeaderOf(raw)
  const timestamp = typeof raw?.timestamp === 'string' ? Number(raw.timestamp) : Number.NaN
  if (!header || !Number.isFinite(timestamp))
    throw new FeedrunnerError(
      'the head the chain answered has no block number, hash, parent or time',
      {
        kind: 'upstream',
      },
    )
  return { number: header.number, timestamp }
}
