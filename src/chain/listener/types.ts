import type { Redis } from 'ioredis'
import type { CancelRequestEvent, OracleRequestEvent } from '../operator.ts'
import type { ChainProvider } from '../provider.ts'

/** The part of a logger the listener writes to (a pino Logger is one). */
export interface ListenerLog {
  warn(fields: Record<string, unknown>, message: string): void
  info(fields: Record<string, unknown>, message: string): void
}

/** What the listener needs to know about one loaded job, by spec id. */
export interface SpecFilter {
  /** The job's `minIncomingConfirmations`; values below 1 count as 1. */
  minConfirmations: number
}

export interface RequestListenerOptions {
  /** An ethers provider (HTTP or WebSocket), or `rpcUrl` to make one. */
  provider?: ChainProvider
  rpcUrl?: string
  chainId?: number
  /** Operator contracts whose logs are read (none: only heads are read until `setOperators`). */
  operators: readonly string[]
  /** Spec ids (lowercase 0x hex, either externalJobID encoding) of the loaded jobs. */
  specIds: ReadonlyMap<string, SpecFilter>
  redis: Redis
  /** Key prefix in Redis; the checkpoint and the consumed markers live under it. */
  prefix: string
  /** Distinguishes listeners that share a prefix but watch different things. */
  name?: string
  /** Called once per confirmed request (again only if it threw). The log is marked consumed after it resolves. */
  onRequest: (event: OracleRequestEvent) => Promise<void> | void
  onCancel?: (event: CancelRequestEvent) => Promise<void> | void
  onError?: (error: Error) => void
  /**
   * Where what the listener finds wrong with the chain goes: its headers' blooms (log-gate.ts), and
   * a node that lasts in not having the blocks it told a head past (stall-report.ts).
   */
  log?: ListenerLog
  /** How the stall report names the chain (`chain 137 (polygon)`); default `chain <id>`. */
  label?: string
  /** While a stall lasts, one line this often (OUTAGE_REPORT_INTERVAL_MS). */
  reportEveryMs?: number
  /** Milliseconds between head polls (WebSocket providers are also woken by new heads). */
  pollIntervalMs?: number
  /**
   * First block to read when no checkpoint is stored (a function is asked only then, at the first
   * scan, which waits for it); default: the current head (only new requests).
   */
  fromBlock?: number | (() => Promise<number>)
  /** Widest `eth_getLogs` block range. */
  maxBlockRange?: number
  /** How far back to rescan when the checkpoint's block was reorged away. */
  rewindDepth?: number
  /** How long a consumed marker is kept; it only needs to outlive any rescan of its block. */
  consumedTtlSeconds?: number
  /**
   * The key whose value a consumed marker is written with and must still match to count (the
   * runner's Redis generation). A marker written after Redis lost its state (a handler's run record
   * and job went with the flush, its marker came after it) then does not keep the log from coming
   * again when the chain is read again; while the key is gone, no marker is written. Without it a
   * marker is `1` and counts forever.
   */
  consumedTagKey?: string
}

export interface ListenerStats {
  /** Logs seen but still waiting for confirmations. */
  pending: number
  delivered: number
  /** Logs skipped because their block was no longer canonical at confirmation time. */
  droppedByReorg: number
  /** Times the checkpoint's block was no longer on the chain (a reorg): the logs were read again. */
  reorgs: number
  /** Requests not delivered because a cancel for them was seen first. */
  cancelledBeforeDelivery: number
  skippedAsConsumed: number
}

export interface RequestListener {
  start(): Promise<void>
  stop(): Promise<void>
  /** Replaces the set of jobs (after a reload of `jobs/`). */
  setSpecIds(specIds: ReadonlyMap<string, SpecFilter>): void
  /** Replaces the Operators whose logs are read (after a reload of `jobs/`); the next scan reads them. */
  setOperators(operators: readonly string[]): void
  /** Runs one scan now (also what the poll loop runs). */
  poll(): Promise<void>
  /** Ends the poll loop's pause: a new head is there (a `newHeads` notification said so). */
  wake(): void
  /**
   * Reads the logs from `blockNumber` on again at the next scan (after Redis lost the checkpoint and the
   * consumed markers: the chain is read again, the handler decides what is still open).
   */
  rewind(blockNumber: number): Promise<void>
  /** Resolves once the logs up to `blockNumber` have been read (delivered if they were confirmed). */
  whenScanned(blockNumber: number, timeoutMs?: number): Promise<void>
  /** Last block whose logs are all settled (delivered, dropped or not ours); undefined before start. */
  readonly checkpoint: number | undefined
  readonly stats: Readonly<ListenerStats>
}

export type OperatorEvent = OracleRequestEvent | CancelRequestEvent
