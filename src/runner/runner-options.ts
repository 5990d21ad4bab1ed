import type { Logger } from '../config/logger.ts'
import type { RunOptions } from '../pipeline/index.ts'
import type { JobRegistry } from './job-registry.ts'
import type { PipelineWorkerOptions } from './pipeline-worker.ts'

export interface RunnerOptions {
  rpcUrl: string
  chainId: number
  redisUrl: string
  prefix: string
  /** Sender keys; never logged, never queued. */
  keys: readonly string[]
  registry: JobRegistry
  logger: Logger
  /** Requests run at once by this process, per sender key (default 64). */
  concurrency?: number
  /** A request held by a crashed process is taken over after about this long. */
  lockDurationMs?: number
  pollIntervalMs?: number
  /** First block to read when no checkpoint is stored (default: the head). */
  fromBlock?: number
  txConfirmations?: number
  /** The least time between two broadcasts of one key (default: the sender's). */
  txBroadcastIntervalMs?: number
  /** RPC_MAX_RESPONSE_BYTES: the largest JSON-RPC answer the sender reads. */
  rpcMaxResponseBytes?: number
  /** Extra run options: environment with BRIDGE_<NAME>_URL, aliases, limits, ... */
  runOptions?: Partial<RunOptions>
  /** Per-requester bounds and the run record's output cap (pipeline-worker.ts). */
  requestPolicy?: Pick<PipelineWorkerOptions, 'admission' | 'outputMaxChars'>
  /** Set false for a process that only listens (no pipeline worker, no sender). */
  work?: boolean
  /** Set false for a process that only works (no listener). */
  listen?: boolean
}
