import type { RpcReceipt } from './model.ts'
import type { TxResult } from './types.ts'

/**
 * A job's result from its mined receipt. A revert is replayed to learn its reason: on the state
 * before its block, then (when an earlier transaction of the same block caused the revert) on the
 * state after it.
 */
export async function resultOfReceipt(
  receipt: RpcReceipt,
  nonce: number,
  from: string,
  replay: (blockTag: number) => Promise<string | undefined>,
): Promise<TxResult> {
  const blockNumber = Number(receipt.blockNumber)
  const mined = { txHash: receipt.transactionHash, blockNumber, nonce, from }
  if (receipt.status === '0x1') return { status: 'mined', ...mined }
  const reason =
    (await replay(blockNumber - 1)) ?? (await replay(blockNumber)) ?? 'reverted on chain'
  return { status: 'reverted', ...mined, reason }
}
