import { getAddress } from 'ethers'
import { DEFAULT_SETTINGS } from '../../config/settings.ts'
import type { KeyCounters, TxSenderOptions } from './types.ts'
import { DEFAULT_GAS_LIMIT } from './types.ts'
import { FeedrunnerError } from '../../config/errors.ts'
import { POOLED_MINED_BOUND_MS } from '../pooled-transactions.ts'
import type { TxJobRecord } from './tx-store.ts'

/** The latest block as the sender sees it; `baseFee` is null on a chain without EIP-1559. */
export interface Head {
  number: number
  hash: string
  /** The block's parent: a head whose parent is not the head seen before says the chain may have reorganised. */
  parentHash?: string
  baseFee: bigint | null
  /** The block's timestamp (unix seconds): the chain's time. */
  timestamp: number
}

export interface RpcReceipt {
  transactionHash: string
  blockNumber: string
  blockHash: string
  status: string
}

export interface UnsignedTx {
  to: string
  data: string
  gasLimit: number
  value: bigint
}

export type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }

/** A key's counters, all at zero. */
export function zeroKeyCounters(): KeyCounters {
  return {
    sent: 0,
    bumped: 0,
    reverted: 0,
    filled: 0,
    resent: 0,
    leasesLost: 0,
    reorgedOut: 0,
    held: 0,
    noncesTaken: 0,
  }
}

/** The sender's options with their defaults applied, read once. */
export interface SenderSettings {
  prefix: string
  confirmations: number
  bumpAfterBlocks: number
  finalityDepth: number
  resendAfterMs: number
  defaultGasLimit: number
  maxInFlight: number
  broadcastIntervalMs: number
  pollIntervalMs: number
  /** How long a new owner waits for the node's pool to empty of the key's transactions Redis lost. */
  drainBoundMs: number
  /** How long a key's owner has to renew its lease before another process may take the key. */
  keyLeaseMs: number
  maxFeeCap: bigint
  closeTimeoutMs: number
}

export function senderSettings(options: TxSenderOptions): SenderSettings {
  return {
    prefix: options.prefix,
    // Defaults that are settings come from the settings schema, declared once there.
    confirmations: Math.max(1, options.confirmations ?? DEFAULT_SETTINGS.TX_CONFIRMATIONS),
    bumpAfterBlocks: Math.max(1, options.bumpAfterBlocks ?? 3),
    finalityDepth: options.finalityDepth ?? DEFAULT_SETTINGS.CHAIN_FINALITY_DEPTH,
    // Same bytes, so a resend costs the node one answer ("already known") when nothing was lost.
    resendAfterMs: options.resendAfterMs ?? 5_000,
    defaultGasLimit: options.gasLimit ?? DEFAULT_GAS_LIMIT,
    maxInFlight: options.maxInFlight ?? DEFAULT_SETTINGS.RUNNER_CONCURRENCY,
    broadcastIntervalMs: options.broadcastIntervalMs ?? DEFAULT_SETTINGS.TX_BROADCAST_INTERVAL_MS,
    pollIntervalMs: options.pollIntervalMs ?? DEFAULT_SETTINGS.CHAIN_POLL_INTERVAL_MS,
    keyLeaseMs: options.keyLeaseMs ?? 15_000,
    drainBoundMs: options.drainBoundMs ?? POOLED_MINED_BOUND_MS,
    maxFeeCap: options.maxFeePerGasCapWei ?? 10n ** 13n,
    closeTimeoutMs: options.closeTimeoutMs ?? 10_000,
  }
}

/** Another transaction used the nonce this job had signed for: the job must start over. */
export class NonceTakenError extends FeedrunnerError {
  override readonly name = 'NonceTakenError'
  constructor(message: string) {
    super(message, { kind: 'node_refused', retryable: true })
  }
}

/**
 * The key's transactions are another process's to order now (its lease was lost or let go, or this
 * process is closing): whatever waited here is told, and a run tried again later finds its
 * transaction's record and waits for the key's owner, or resumes it if that is this process again.
 */
export class HandedOverError extends FeedrunnerError {
  override readonly name = 'HandedOverError'
  constructor(message: string) {
    super(message, { kind: 'unavailable', retryable: true })
  }
}

/** The job was bound to a transaction by an earlier run (in a race with this one): read its record. */
export class JobBoundError extends FeedrunnerError {
  override readonly name = 'JobBoundError'
  constructor(jobId: string) {
    super(`tx job ${jobId} has a transaction already`, { kind: 'internal', retryable: true })
  }
}

/** Records of filler transactions in the tx store are kept under ids with this prefix (never a job's). */
export const FILLER_ID_PREFIX = 'filler-'

/** A recorded job's transaction as the signer takes it; a filler's when it has none. */
export function storedTx(address: string, tx: TxJobRecord['tx']): UnsignedTx {
  return tx ? { ...tx, to: getAddress(tx.to), value: 0n } : fillerTx(address)
}

/** A 0-value transfer to oneself: spends a nonce without doing anything. */
export function fillerTx(address: string): UnsignedTx {
  return { to: address, data: '0x', gasLimit: 21_000, value: 0n }
}

export function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason))
}

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const nested = (error as Error & { error?: { message?: string } }).error?.message
    return `${error.message} ${nested ?? ''}`
  }
  return String(error)
}

/** Whether `current` is the head seen before or its child: no reorg could have happened between. */
export function extendsOrIs(current: Head, before: Head | undefined): boolean {
  if (!before) return false
  if (current.hash === before.hash) return true
  return current.number === before.number + 1 && current.parentHash === before.hash
}
