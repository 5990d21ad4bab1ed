import type { JsonRpcApiProvider } from 'ethers'
import { PoolProvider } from '../../chain/endpoints/pool-provider.ts'
import { headHeaderOf } from '../../chain/head-header.ts'
import { FeedrunnerError } from '../../config/errors.ts'

export interface Head {
  number: number
  hash: string
  parentHash: string
  /** Unix seconds. */
  timestamp: number
}

/**
 * The chain's head block (its number, hash, parent and time). Through a pool, its one shared read
 * (EndpointPool.latestHeader): the listener's read or newHeads notification answers the monitor's
 * look too, and no read is made before the chain's next block is due, so a tick shorter than a block
 * asks nothing. Otherwise asked.
 */
export async function latestHead(provider: JsonRpcApiProvider): Promise<Head> {
  if (!(provider instanceof PoolProvider)) {
    const block = await provider.getBlock('latest')
    if (!block?.hash)
      throw new FeedrunnerError('the node has no latest block', { kind: 'unavailable' })
    const { number, hash, parentHash, timestamp } = block
    return { number, hash, parentHash, timestamp }
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
  return { number: header.number, hash: header.hash, parentHash: header.parentHash, timestamp }
}

/**
 * Whether `next` is on the chain `last` was on: `last` itself, its child, or a later head whose
 * chain still holds `last` (one read of the block at last's height, only when heads were skipped).
 * A head lower than the last, or one whose parent is not it, says the chain reorganised (or an
 * endpoint behind answered): what was read from the chain before may not hold.
 */
export async function extendsHead(
  provider: JsonRpcApiProvider,
  last: Head,
  next: Head,
): Promise<boolean> {
  if (next.number === last.number) return next.hash === last.hash
  if (next.number === last.number + 1) return next.parentHash === last.hash
  if (next.number < last.number) return false
  const then = await provider.getBlock(last.number)
  return then?.hash === last.hash
}
