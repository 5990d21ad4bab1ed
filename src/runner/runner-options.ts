import type { ChainConfig, EndpointConfig } from '../config/chains.ts'
import type { Logger } from '../config/logger.ts'
import type { Connections } from '../queue/connections.ts'
import type { RunOptions } from '../pipeline/index.ts'
import type { JobRegistry } from './job-registry.ts'
import type { PipelineWorkerOptions } from './pipeline-worker.ts'
import type { RequesterLimits } from './admission.ts'
import type { RetryPolicy } from './retry-policy.ts'

export interface RunnerOptions {
  /** The chain: its endpoints, keys, confirmations and gas (src/config/chains.ts). */
  chain: ChainConfig
  chainId: number
  /** The process's connections: every Redis connection of the runner comes from them. */
  connections: Connections
  prefix: string
  /** Sender keys; never logged, never queued. */
  keys: readonly string[]
  registry: JobRegistry
  logger: Logger
  /** Requests run at once by this process, per sender key it owns (RUNNER_CONCURRENCY). */
  concurrency: number
  /** A request held by a crashed process is taken over after about this long (RUNNER_LOCK_MS). */
  lockDurationMs: number
  /** How often and how far apart a request is tried (RUN_ATTEMPTS, RUN_BACKOFF_MS). */
  retry?: RetryPolicy
  /** RUN_MAX_CRASHES: crashes of a request's runs before it is quarantined. */
  maxCrashes?: number
  /** The widest eth_getLogs range the reconciler and a run's closure check ask (CHAIN_LOG_RANGE_BLOCKS). */
  logRangeBlocks?: number
  /** CHAIN_POLL_INTERVAL_MS */
  pollIntervalMs: number
  /**
   * First block to read when no checkpoint is stored (default: the oldest block whose requests may
   * still be open, i.e. not past their cancelExpiration).
   */
  fromBlock?: number
  /** How often run records that are not settled are checked against the chain (RUNNER_RECONCILE_INTERVAL_MS). */
  reconcileIntervalMs: number
  /** TX_CONFIRMATIONS */
  txConfirmations: number
  /** CHAIN_FINALITY_DEPTH (or the chain's finality_depth) */
  finalityDepth?: number
  /** The least time between two broadcasts of one key (TX_BROADCAST_INTERVAL_MS). */
  txBroadcastIntervalMs: number
  /** RPC_MAX_RESPONSE_BYTES: the largest JSON-RPC answer the sender reads. */
  rpcMaxResponseBytes?: number
  /** Extra run options: environment with BRIDGE_<NAME>_URL, aliases, limits, ... */
  runOptions?: Partial<RunOptions>
  /** Per-requester bounds (shared through Redis by every runner process) and the run record's output cap. */
  requestPolicy?: {
    requesterLimits?: RequesterLimits
    outputMaxChars?: PipelineWorkerOptions['outputMaxChars']
  }
  /** Set false for a process that only listens (no pipeline worker, no sender). */
  work?: boolean
  /** Set false for a process that only works (no listener). */
  listen?: boolean
}

/** The endpoint reads go to: the chain's first that is not send-only. */
export function readEndpoint(chain: ChainConfig): EndpointConfig {
  const endpoint = chain.endpoints.find((declared) => !declared.sendOnly)
  if (!endpoint) throw new Error(`${chain.label} has no endpoint for reads`)
  return endpoint
}
