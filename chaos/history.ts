import type { ErrorKind } from '../src/config/errors.ts'
import type { StopOutcome } from './part.ts'
import type { KeyState, MinedPush } from './chain-read.ts'
import type { FaultKind } from './schedule.ts'

/**
 * What a schedule left behind, as plain data: the invariants (invariants.ts) read nothing else, so a
 * test can hand them a doctored history. Times on the chain are unwarped seconds (chain-read.ts);
 * times the harness saw are epoch milliseconds of its own (unfaked) clock.
 */
export interface History {
  requests: RequestFact[]
  /** OracleResponse logs of the canonical chain, one per answer. */
  responses: OutcomeFact[]
  /**
   * Every transaction of the canonical chain from a node key that calls fulfillOracleRequest or
   * fulfillOracleRequest2, succeeded or reverted, read from the blocks themselves.
   */
  fulfilments: FulfilmentFact[]
  /** CancelOracleRequest logs of the canonical chain. */
  cancels: OutcomeFact[]
  /**
   * Every transaction of the canonical chain from a node key that writes a cron tick (PushedValue's
   * push), succeeded or reverted, when the schedule ran a cron job.
   */
  pushes: PushFact[]
  /** The schedule's cron job's period, when it ran one. */
  cronEveryMs?: number
  /** The schedule's flux feed, as the chain holds it, when it ran one. */
  flux?: FluxFacts
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
  /** Each fault the harness injected, from its first step to its last (a process back, a link restored). */
  faults: FaultWindow[]
  /** The schedule's RUNNER_LOCK_MS: how long a request held by a stopped runner waits for another. */
  lockMs: number
  /** When the schedule's clock started (epoch ms): the report tells times from it. */
  startedAt: number
  /**
   * When the harness began to stop the processes (or read this history, before that): a request
   * still open was open with the stack running until then (epoch ms).
   */
  stoppedAt: number
}

/** A fulfilment transaction as the chain mined it. */
export interface FulfilmentFact {
  requestId: string
  hash: string
  from: string
  nonce: number
  block: number
  /** Its position in the block. */
  index: number
  reverted: boolean
  /** The cancelExpiration it answers: a request mined again after a reorg may have another. */
  expiration: bigint
  /** When the RPC proxy first saw it or an earlier fee bump of it (epoch ms). */
  sentAt?: number
  /**
   * The chain's head when the RPC proxy first saw this transaction, or an earlier fee bump of it (the
   * same sender, nonce and call): the node simulated it at that head or before. Undefined when the
   * proxy never saw it.
   */
  sentAtHead?: number
}

/** A cron tick's write as the chain mined it (its tick: epoch ms by Redis's clock, as claimed). */
export type PushFact = MinedPush

/** A schedule's flux feed: its aggregator's logs and every transaction a node key sent it. */
export interface FluxFacts {
  aggregator: string
  /** The job's idleTimerPeriod (the heartbeat). */
  idleMs: number
  /** The value every submission must carry (the game's odds times 100). */
  expected: bigint
  /** The aggregator's SubmissionReceived logs. */
  submissions: Array<{
    round: number
    oracle: string
    value: bigint
    block: number
    txHash: string
  }>
  /** Its NewRound logs; `at` is the round's block time, unwarped seconds. */
  rounds: Array<{ round: number; startedBy: string; block: number; at: number }>
  /** Every transaction of the canonical chain from a node key to the aggregator, succeeded or reverted. */
  txs: FluxTxFact[]
}

export interface FluxTxFact {
  hash: string
  from: string
  nonce: number
  block: number
  index: number
  /** The round a submit names; undefined for any other call. */
  round?: number
  reverted: boolean
  /** When the RPC proxy first saw it or an earlier fee bump of it (epoch ms). */
  sentAt?: number
  /** The chain's head then: the node simulated it at that head or before. */
  sentAtHead?: number
}

/** A fault, in the harness's epoch milliseconds. */
export interface FaultWindow {
  kind: FaultKind
  /** How the report names it (`SIGKILL runner-2`, `RPC cut`). */
  label: string
  /** The process it stopped, for a kill. */
  part?: string
  /** Whether it stopped a process that runs a runner (a kill of one, or a cancel storm). */
  stopsRunner: boolean
  fromMs: number
  toMs: number
  /** The first block a reorg replaced. */
  fromBlock?: number
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
  /** Its cancelExpiration as the request log says (the chain's own, warped, seconds). */
  cancelExpiration: bigint
  /** The position of its transaction in its block. */
  index: number
  /** Its cancelExpiration has passed by the chain's own clock (jumps included) at its last block. */
  expired: boolean
}

export interface OutcomeFact {
  requestId: string
  txHash: string
  block: number
  /** The transaction's position in its block. */
  index: number
  /** Unwarped seconds of its block. */
  at: number
  /** The sender and nonce of the transaction (answers only). */
  from?: string
  nonce?: number
}

export interface SignedFact {
  /** When the RPC proxy first saw it (epoch ms). */
  at: number
  /** The chain's head then, if the proxy could read it. */
  head?: number
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
  /** When it entered its state (epoch ms by Redis's clock, which is the host's here). */
  at?: number
  /** The kind of the failure it ended with (errored, refused). */
  failureKind?: ErrorKind
  /** Which failure of its kind (the error's code: a refusal's reason), where it has one. */
  failureCode?: string
  /** Quarantined: its runs crashed RUN_MAX_CRASHES times. */
  quarantined?: boolean
}

/** One broken invariant of one schedule. */
export interface Violation {
  invariant: InvariantName
  detail: string
}

export type InvariantName =
  | 'one-fulfilment'
  | 'fulfilment-reverted'
  | 'settled'
  | 'unexplained-failure'
  | 'stalled'
  | 'before-expiry'
  | 'right-value'
  | 'one-fulfilment-per-nonce'
  | 'no-nonce-gap'
  | 'records-agree'
  | 'one-push-per-tick'
  | 'push-reverted'
  | 'cron-live'
  | 'flux-one-per-round'
  | 'flux-value'
  | 'flux-reverted'
  | 'flux-live'
  | 'sigterm-exit'
  | 'process-died'
  | 'restarts'
  | 'harness'
