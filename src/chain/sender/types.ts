import type { JsonRpcApiProvider } from 'ethers'
import type { Connections } from '../../queue/connections.ts'
import type { EndpointPool } from '../endpoints/pool.ts'
import { createHash } from 'node:crypto'
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
  /** Also the queue job id: a second submit with the same key joins the first (use the request id). */
  idempotencyKey: string
  /** Run it with eth_call before signing and send nothing if that reverts (the result says why). */
  simulate?: boolean
  /**
   * This may repeat an earlier submission (a redelivered run): an earlier job of the same key that
   * failed for good runs again. A first submission skips that look (a Redis script per transaction).
   */
  resubmit?: boolean
}

export const jobDataSchema = z.object({
  to: z.string().regex(/^0x[0-9a-fA-F]{40}$/, { message: 'expected an address' }),
  data: z.string().regex(/^0x([0-9a-fA-F]{2})*$/, { message: 'expected 0x hex calldata' }),
  gasLimit: z.number().int().positive().optional(),
  simulate: z.boolean().optional(),
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
  /** Sender private keys; each gets its own ordered queue and worker. Never logged or queued. */
  keys: readonly string[]
  /** Used when no `connections` are given (a sender started alone). */
  redisUrl: string
  /** The process's connections (its composition root's): every Redis connection comes from them. */
  connections?: Connections
  /** Prefix of the BullMQ queues and of the sender's own Redis keys. */
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
  /** BullMQ lock: a job of a crashed process is taken over after about this long. */
  lockDurationMs?: number
  /** close() waits this long for running jobs before it stops them (they are retried elsewhere). */
  closeTimeoutMs?: number
  onError?: (error: Error) => void
}

/** How one job is run. */
export interface RunMode {
  /** May repeat an earlier submission: a job that failed for good runs again. */
  resubmit: boolean
  /** No queue holds the job: its data is stored with its nonce, and it is leased while it runs. */
  direct: boolean
}

/** What a key's sender needs to know about the jobs that carry its transactions. */
export interface TxJobLookup {
  /** The job's submitted data, if the job is still there (unchecked). */
  dataOf(jobId: string): Promise<unknown>
  /** A job that will still send or watch its transaction (queued, retrying or running anywhere). */
  isLive(jobId: string): Promise<boolean>
}

export interface KeyStats {
  address: string
  nextNonce: number
  pending: number
  sent: number
  bumped: number
  reverted: number
  /** Nonces spent on a filler because the transaction that held them could never be mined. */
  filled: number
  /** Transactions sent again unchanged because the key's mined nonce stood still. */
  resent: number
}

export interface TxSender {
  /** Starts one worker per key (a process that only submits does not need to). */
  start(): Promise<void>
  submit(submission: TxSubmission, timeoutMs?: number): Promise<TxResult>
  /** Sender addresses, in the order of `keys`. */
  readonly addresses: readonly string[]
  /** The queue name of each key: `tx-<chain id>-<address lowercased>` (`tx-<address>` without a chain id). */
  readonly queueNames: readonly string[]
  stats(): KeyStats[]
  /**
   * Reads every key's nonce from the chain again (after Redis lost the counters): the next nonce is the
   * node's pending count, raised past whatever the store still holds in flight.
   */
  resyncNonces(): Promise<void>
  /** Each key's balance (wei) as the node has it now, in the order of `keys`. */
  balances(): Promise<bigint[]>
  close(): Promise<void>
}

/** The key a job goes to: a stable hash of its idempotency key, so a resubmit finds the same queue. */
export function pickKeyIndex(idempotencyKey: string, keyCount: number): number {
  return createHash('sha256').update(idempotencyKey).digest().readUInt32BE(0) % keyCount
}

/** BullMQ refuses `:` in most custom job ids. */
export function jobIdOf(idempotencyKey: string): string {
  return idempotencyKey.replaceAll(':', '_')
}

/** A key's queue; the chain id keeps one key's queues on two chains apart. */
export function txQueueName(address: string, chainId?: number): string {
  return chainId === undefined
    ? `tx-${address.toLowerCase()}`
    : `tx-${chainId}-${address.toLowerCase()}`
}

/** Where a key's nonce counter and attempts live in Redis: one key serving two chains has two. */
export function txStateKey(prefix: string, chainId: number, address: string): string {
  return `${prefix}:txstate:${chainId}:${address.toLowerCase()}`
}
