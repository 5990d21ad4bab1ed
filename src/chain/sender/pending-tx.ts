import type { RpcReceipt, UnsignedTx } from './model.ts'
import type { TxAttempt } from './tx-store.ts'
import type { TxResult } from './types.ts'

/** Someone waiting for a transaction: a run's ethtx, here. */
export interface Waiter {
  resolve: (entry: PendingTx) => void
  reject: (error: Error) => void
}

/** A transaction of the key that is sent and watched until it is deep enough (or its nonce is taken). */
export interface PendingTx {
  nonce: number
  jobId: string
  tx: UnsignedTx
  attempts: TxAttempt[]
  sentAtBlock: number
  /** When its last attempt was last sent (Date.now()): a resend is due resendAfterMs later. */
  sentAt: number
  misses: number
  bumping: boolean
  receipt?: RpcReceipt
  /** How it ended, once final (set by the final handler, before the waiters hear of it). */
  result?: TxResult
  /** Runs waiting for it in this process; none for one recovered from Redis. */
  waiters: Waiter[]
}

/** A mined transaction a reorg took away, and the block it was mined in. */
export interface ReorgedTx {
  entry: PendingTx
  minedIn: number
}
