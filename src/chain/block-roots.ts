import { z } from 'zod'
import { FeedrunnerError } from '../config/errors.ts'

/** The roots of the block a request's log is in: Chainlink's `jobRun.block*Root` variables. */
export interface BlockRoots {
  receiptsRoot: string
  transactionsRoot: string
  stateRoot: string
}

const hash = z.string().regex(/^0x[0-9a-fA-F]{64}$/)
const blockAnswer = z.object({ receiptsRoot: hash, transactionsRoot: hash, stateRoot: hash })

/**
 * The roots of the block with `blockHash`, read with eth_getBlockByHash: what Chainlink's
 * `$(jobRun.blockReceiptsRoot)`, `blockTransactionsRoot` and `blockStateRoot` hold. A node that does
 * not answer is `unavailable` (retryable); a block it does not know or an answer of another shape is
 * an `upstream` error naming the block.
 */
export async function readBlockRoots(
  provider: { send(method: string, params: unknown[]): Promise<unknown> },
  blockHash: string,
): Promise<BlockRoots> {
  let answer: unknown
  try {
    answer = await provider.send('eth_getBlockByHash', [blockHash, false])
  } catch (error) {
    throw new FeedrunnerError(`eth_getBlockByHash ${blockHash} failed`, {
      kind: 'unavailable',
      cause: error,
    })
  }
  const block = blockAnswer.safeParse(answer)
  if (!block.success)
    throw new FeedrunnerError(
      `eth_getBlockByHash ${blockHash}: ${answer === null ? 'the node does not know the block (reorganised away?)' : 'an answer without the block roots'}`,
      { kind: 'upstream' },
    )
  return block.data
}
