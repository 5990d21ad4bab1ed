import type { PendingTx } from './pending-tx.ts'
import type { Head, RpcReceipt } from './model.ts'
import type { SenderNode } from './node-client.ts'

/**
 * More transactions than this due at one head: the key's nonce count is read first, and only the
 * receipts below it. A chain that took few of them would otherwise cost a read for each one left out.
 */
export const DIRECT_RECEIPT_READS_MAX = 16

/** What decides whether a look can go to the receipts without the key's nonce count first. */
export interface DirectLookState {
  pending: Iterable<PendingTx>
  current: Head
  /** The key's mined nonce count as far as known (every nonce below it is mined); -1 before the first read. */
  minedNonce: number
  /** The key's mined nonce has stood still for the resend time: the count decides what to resend. */
  stalled: boolean
  bumpAfterBlocks: number
}

/**
 * The transactions whose receipts a look at `current` asks for directly, lowest nonce first, or
 * undefined when the key's mined nonce count must be read first (Chainlink's confirmer reads it once
 * a head per key: on a quiet chain that is a call a block for each request in flight).
 *
 * Direct reads are enough while nothing is due that only the count decides: every nonce below the
 * lowest one in flight is known mined (no hole to fill), the key has not stood still for the resend
 * time (what to send again), and nothing in flight has waited bumpAfterBlocks (whether a bump is due,
 * or its nonce was taken by another transaction). A transaction that missed the block after the one
 * it was sent at costs a receipt read a block until then, as the count would have. Due are those
 * sent before `current`: a transaction sent at `current` cannot be in it.
 */
export function dueForDirectReads(state: DirectLookState): PendingTx[] | undefined {
  if (state.stalled) return undefined
  const unmined = [...state.pending]
    .filter((entry) => !entry.receipt)
    .sort((a, b) => a.nonce - b.nonce)
  const lowest = unmined[0]
  if (lowest && lowest.nonce > state.minedNonce) return undefined
  const age = (entry: PendingTx) => state.current.number - entry.sentAtBlock
  if (unmined.some((entry) => age(entry) >= state.bumpAfterBlocks)) return undefined
  const due = unmined.filter((entry) => age(entry) >= 1)
  return due.length <= DIRECT_RECEIPT_READS_MAX ? due : undefined
}

/**
 * Reads the receipts of `due` (in nonce order): the lowest first, as the chain mines a key's nonces
 * in order and none above it can be mined while it is not, so a look that finds nothing costs one
 * call, as a nonce read would; the others together once it was found. Sets `receipt` on each found.
 */
export async function readDueReceipts(
  node: Pick<SenderNode, 'send'>,
  due: readonly PendingTx[],
): Promise<void> {
  const [lowest, ...rest] = due
  if (!lowest) return
  lowest.receipt = await receiptOf(node, lowest)
  if (!lowest.receipt) return
  await Promise.all(
    rest.map(async (entry) => {
      entry.receipt = await receiptOf(node, entry)
    }),
  )
}

/** The receipt of whichever of the job's attempts was mined, if one was. */
export async function receiptOf(
  node: Pick<SenderNode, 'send'>,
  entry: PendingTx,
): Promise<RpcReceipt | undefined> {
  const receipts = await Promise.all(
    entry.attempts.map((attempt) =>
      node.send<RpcReceipt | null>('eth_getTransactionReceipt', [attempt.hash]),
    ),
  )
  return receipts.find((receipt): receipt is RpcReceipt => receipt !== null)
}
