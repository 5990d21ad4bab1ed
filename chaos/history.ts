import type { StopOutcome } from './part.ts'
import type { KeyState } from './chain-read.ts'

/**
 * What a schedule left behind, as plain data: the invariants (invariants.ts) read nothing else, so a
 * test can hand them a doctored history. Times on the chain are unwarped seconds (chain-read.ts);
 * times the harness saw are epoch milliseconds of its own (unfaked) clock.
 */
export interface History {
  requests: RequestFact[]
  /** OracleResponse logs of the canonical chain, one per answer. */
  responses: OutcomeFact[]
  /** CancelOracleRequest logs of the canonical chain. */
  cancels: OutcomeFact[]
  /** The value the consumer stored, by request id. */
  values: ReadonlyMap<string, bigint>
  /** Every raw transaction a runner sent through the RPC proxy, decoded. */
  signed: SignedFact[]
  /** The sender keys after quiescence. */
  keys: KeyState[]
  /**
   * What became of each transaction a runner sent or a run record names: mined (its block, and
   * whether it reverted), or absent from the chain (no entry).
   */
  fates: ReadonlyMap<string, { block: number; reverted: boolean }>
  /** The run record of each request (RunStore), undefined where there is none. */
  runs: ReadonlyMap<string, RunFact | undefined>
  /** Every SIGTERM and SIGKILL the harness sent, with how the process ended. */
  stops: StopOutcome[]
  /** Processes that did not come back after a fault. */
  startFailures: string[]
  /**
   * Transactions a reorg took away that the chain no longer has in any form (not mined again, not
   * back in the pool): their nonces are free, and signing another transaction for one is no fault.
   */
  gone: ReadonlySet<string>
}

export interface RequestFact {
  requestId: string
  /** How the harness sent it (`request:12`, `storm:3`); undefined for a request it did not make. */
  purpose?: string
  /** The value it must be answered with. */
  expected?: bigint
  block: number
  /** Unwarped seconds of its block. */
  at: number
  /** Its cancelExpiration on the same scale. */
  expiresAt: number
}

export interface OutcomeFact {
  requestId: string
  txHash: string
  block: number
  /** Unwarped seconds of its block. */
  at: number
  /** The sender and nonce of the transaction (answers only). */
  from?: string
  nonce?: number
}

export interface SignedFact {
  /** When the RPC proxy first saw it (epoch ms). */
  at: number
  hash: string
  from: string
  nonce: number
  /** The request a fulfillOracleRequest2 answers; undefined for any other transaction (a filler). */
  fulfils?: string
  /** What the transaction does (to, calldata, value): a fee bump keeps it, another fulfilment does not. */
  effect: string
}

export interface RunFact {
  state: string
  reason?: string
  txHash?: string
}

/** One broken invariant of one schedule. */
export interface Violation {
  invariant: InvariantName
  detail: string
}

export type InvariantName =
  | 'fulfilled-once'
  | 'settled'
  | 'before-expiry'
  | 'right-value'
  | 'one-fulfilment-per-nonce'
  | 'no-nonce-gap'
  | 'records-agree'
  | 'no-known-revert'
  | 'sigterm-exit'
  | 'process-died'
  | 'restarts'
  | 'harness'
