import type { JsonRpcApiProvider } from 'ethers'
import type { Logger } from '../../config/logger.ts'
import type { Connections } from '../../queue/connections.ts'
import type { EndpointPool } from '../endpoints/pool.ts'
import { z } from 'zod'

export const DEFAULT_GAS_LIMIT = 500_000

export type TxStatus = 'mined' | 'already-fulfilled' | 'reverted'

/** How a submitted transaction ended. `reverted` carries the decoded reason (from the simulation or the mined tx). */
export interface TxResult {
  status: TxStatus
  txHash?: string
  blockNumber?: number
  nonce?: number
  from?: string
  reason?: string
}

export const txResultSchema = z.object({
  status: z.enum(['mined', 'already-fulfilled', 'reverted']),
  txHash: z.string().optional(),
  blockNumber: z.number().optional(),
  nonce: z.number().optional(),
  from: z.string().optional(),
  reason: z.string().optional(),
})

export interface TxSubmission {
  to: string
  data: string
  gasLimit?: number
  /**
   * The job's id: a second submit with the same key, in any process, joins the first's transaction
   * (use the request id). Every transaction is simulated (eth_call) just before it is signed, and
   * nothing is sent when that reverts (the result says why).
   */
  idempotencyKey: string
  /**
   * The key to send from (a FluxAggregator oracle must submit as itself): a job with no transaction
   * yet goes to it while this process owns it and gives it work, else fails as unavailable. Without
   * it, the least loaded key this process owns.
   */
  from?: string
  /** Stops waiting (the transaction, once sent, is still watched to its end by the key's owner). */
  signal?: AbortSignal
}

export const jobDataSchema = z.object({
  to: z.string().regex(/^0x[0-9a-fA-F]{40}$/, { message: 'expected an address' }),
  data: z.string().regex(/^0x([0-9a-fA-F]{2})*$/, { message: 'expected 0x hex calldata' }),
  gasLimit: z.number().int().positive().optional(),
})
export type TxJobData = z.infer<typeof jobDataSchema>

export interface TxSenderOptions {
  rpcUrl: string
  /** The chain's endpoint pool and its provider: reads to the healthiest endpoint, broadcasts to all. */
  pool?: EndpointPool
  provider?: JsonRpcApiProvider
  chainId?: number
  /** RPC_MAX_RESPONSE_BYTES: the largest JSON-RPC answer read from the node. */
  rpcMaxResponseBytes?: number
  /** Sender private keys; each is ordered by the one process that owns it. Never logged or queued. */
  keys: readonly string[]
  /** Used when no `connections` are given (a sender started alone). */
  redisUrl: string
  /** The process's connections (its composition root's): every Redis connection comes from them. */
  connections?: Connections
  /** Prefix of the sender's Redis keys (`<prefix>:txstate:<chain id>`). */
  prefix: string
  /**
   * The least time between two broadcast batches of one key (default 50 ms); what is signed meanwhile
   * joins the next batch. On a chain with blocks seconds apart the wait changes no block a transaction
   * lands in and saves the node requests; on an automining dev chain the batches fill blocks, and fewer
   * blocks cost the node less (README, Performance: one key's fulfilment blocks 422 -> 279 per 1,000).
   */
  broadcastIntervalMs?: number
  /** Blocks a receipt must be deep before a job ends (1 = mined). */
  confirmations?: number
  /** Blocks a mined transaction is watched for a reorg that drops it (then sent again, same bytes). */
  finalityDepth?: number
  /** A transaction not mined after this many blocks is re-sent with the same nonce and +20 % fees. */
  bumpAfterBlocks?: number
  /** A key whose mined nonce stood still this long sends its unmined transactions again (default 5 s). */
  resendAfterMs?: number
  gasLimit?: number
  /** Transactions per key in flight at once (signed in nonce order, receipts awaited together). */
  maxInFlight?: number
  /** How often heads, nonces and receipts are polled. */
  pollIntervalMs?: number
  /** Priority fee (wei); default: what the node suggests at start. */
  priorityFeeWei?: bigint
  /** Bumping stops below this max fee per gas (wei); default 10,000 gwei. */
  maxFeePerGasCapWei?: bigint
  /** A key's lease: the keys of a process that died are taken over after about this long. */
  keyLeaseMs?: number
  /** How long a new owner waits for the node's pool to empty of transactions Redis lost (120 s). */
  drainBoundMs?: number
  /** Where the keys' ownership changes are told (taken, lost, let go). */
  logger?: Pick<Logger, 'info' | 'warn'>
  /** close() waits this long for running jobs before it stops them (they are retried elsewhere). */
  closeTimeoutMs?: number
  onError?: (error: Error) => void
}

/** A key's counters, shared by the parts of its sender that move them. */
export interface KeyCounters {
  sent: number
  bumped: number
  reverted: number
  /** Nonces spent on a filler because the transaction that held them could never be mined. */
  filled: number
  /** Transactions sent again unchanged because the key's mined nonce stood still (resendAfterMs). */
  resent: number
  /** Leases of the key this process lost: the key went to another process with its transactions. */
  leasesLost: number
  /** Mined transactions a reorg took away, sent again (CHAIN_FINALITY_DEPTH). */
  reorgedOut: number
  /** Looks at which a transaction was kept back because the request it answers was not on chain. */
  held: number
  /** Nonces of the key spent by a transaction this installation did not record: its job went again. */
  noncesTaken: number
}

/** A key's state and counters, as the sender tells them. */
export interface KeyStats extends KeyCounters {
  address: string
  nextNonce: number
  pending: number
  /** Whether this process owns the key now. */
  owned: boolean
}

export interface TxSender {
  /** Connects, then takes this process's share of the keys (and keeps it, renewing their leases). */
  start(): Promise<void>
  /**
   * Sends a transaction from a key this process owns and waits for it; a job with a transaction
   * already (a retried run) resumes it, or waits for the owner of the key it is bound to.
   */
  submit(submission: TxSubmission, timeoutMs?: number): Promise<TxResult>
  /** Sender addresses, in the order of `keys`. */
  readonly addresses: readonly string[]
  stats(): KeyStats[]
  /** Keys this process owns and may give work to now, and leases it lost so far. */
  ownership(): { available: number; owned: number; lostLeases: number }
  /** Called whenever the keys available here change (the runner sizes its worker by them). */
  onOwnershipChange(listener: () => void): void
  /** Each key's balance (wei) as the node has it now, in the order of `keys`. */
  balances(): Promise<bigint[]>
  /** The chain's time (unix seconds): the latest block's timestamp, read at most once a poll. */
  chainTime(): Promise<number>
  /** Whether a job (by its idempotency key) has a transaction already, in any process. */
  bound(idempotencyKey: string): Promise<boolean>
  /** Hands every key over (waiters told, leases let go) within its close timeout. */
  close(): Promise<void>
}

/** BullMQ refuses `:` in most custom job ids, and a job id is part of a Redis key here. */
export function jobIdOf(idempotencyKey: string): string {
  return idempotencyKey.replaceAll(':', '_')
}

/** Where a chain's sender state lives in Redis: one key serving two chains has two. */
export function txStateBase(prefix: string, chainId: number): string {
  return `${prefix}:txstate:${chainId}`
}
