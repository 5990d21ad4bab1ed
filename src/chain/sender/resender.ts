import type { PendingTx } from './pending-tx.ts'
import { feesAbove } from './fee-policy.ts'
import type { Head } from './model.ts'
import type { KeyCounters } from './types.ts'
import type { SenderNode } from './node-client.ts'
import type { SignAttempt } from './signing.ts'
import type { TxAttempt, TxStore } from './tx-store.ts'

export interface ResenderParts {
  address: string
  node: Pick<SenderNode, 'currentFees' | 'broadcast'>
  sign: SignAttempt
  store: TxStore
  /** Bumping stops below this max fee per gas (wei). */
  maxFeeCap: bigint
  counters: KeyCounters
  /** The fence this process owns the key under; undefined when it does not own it. */
  fence: () => string | undefined
  reportError: (error: Error) => void
}

/**
 * A key's resender (Chainlink's "bump"): re-signs a stuck transaction with the same nonce and at
 * least 20 % higher fees, records the attempt, then sends it.
 */
export function createResender(parts: ResenderParts) {
  return async function bump(entry: PendingTx, current: Head): Promise<void> {
    const last = entry.attempts.at(-1) as TxAttempt
    const { maxFeePerGas, maxPriorityFeePerGas } = feesAbove(last, await parts.node.currentFees())
    if (maxFeePerGas > parts.maxFeeCap) {
      entry.sentAtBlock = current.number
      parts.reportError(
        new Error(
          `nonce ${entry.nonce} of ${parts.address} is stuck but a bump would pass the fee cap of ${parts.maxFeeCap} wei`,
        ),
      )
      return
    }
    const attempt = await parts.sign(
      entry.tx,
      entry.nonce,
      { maxFeePerGas, maxPriorityFeePerGas },
      last.filler === true,
    )
    const attempts = [...entry.attempts, attempt]
    const fence = parts.fence()
    // Recorded before it leaves, and only by the key's owner: a bump is never sent unrecorded.
    if (
      fence === undefined ||
      !(await parts.store.storeAttempts(parts.address, fence, entry, attempts))
    )
      return
    entry.attempts = attempts
    entry.sentAtBlock = current.number
    entry.sentAt = Date.now()
    parts.counters.bumped += 1
    await parts.node.broadcast(attempt.raw)
  }
}
