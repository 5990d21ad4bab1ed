import type { Decimal } from '../../reduce/decimal.ts'
import type { JsonRpcApiProvider } from 'ethers'
import type { Logger } from '../../config/logger.ts'
import type { TxResult, TxSender } from '../../chain/sender/index.ts'
import type { FluxTrigger, Skip } from './decision.ts'
import type { FluxJob } from './flux-job.ts'

/** What the flux monitor of one chain is given (monitor.ts). */
export interface FluxMonitorOptions {
  chainId: number
  provider: JsonRpcApiProvider
  sender: Pick<TxSender, 'submit' | 'bound' | 'addresses' | 'ownership' | 'stats'>
  jobs: readonly FluxJob[]
  /**
   * Runs a job's pipeline: its result as a decimal, which is checked, then submitted without what is
   * after the point. Stopped by `signal` when the monitor stops.
   */
  observe: (job: FluxJob, meta: Record<string, unknown>, signal: AbortSignal) => Promise<Decimal>
  log: Logger
  /** How often the loop looks at the chain and the timers (default 500 ms). */
  tickMs?: number
  /** How long stop() waits for the look in progress before it lets it go (default 5 s). */
  stopTimeoutMs?: number
  /** The clock of its log's failure reports (Date.now unless a test says otherwise). */
  now?: () => number
  /** What the monitor decided, each time (tests and metrics read it). */
  onDecision?: (decision: FluxDecision) => void
}

export type FluxDecision =
  | { job: string; trigger: FluxTrigger; roundId?: number; outcome: 'skipped'; skip: Skip }
  | {
      job: string
      trigger: FluxTrigger
      roundId: number
      outcome: 'submitted'
      value: bigint
      result: TxResult
    }
  | { job: string; trigger: FluxTrigger; outcome: 'failed'; error: string }

/** A flux feed as this node sees it now (`feedrunner status` shows it). */
export interface FluxFeed {
  job: string
  aggregator: string
  roundId?: string
  answer?: string
  /** Unix seconds. */
  updatedAt?: number
  /** Unix seconds: when the heartbeat is due; none when the idle timer is disabled. */
  nextHeartbeatAt?: number
  /** Unix seconds, on the chain's clock: the drumbeat's next instant, when it is enabled. */
  nextDrumbeatAt?: number
}

export interface FluxMonitor {
  /** Each job's feed, as of the last look; none while this process does not look (no key owned). */
  feeds(): FluxFeed[]
  /** The chain's fluxmonitor jobs from now on (a reload of the jobs folder): each job keeps its timers. */
  setJobs(jobs: readonly FluxJob[]): void
  /**
   * Ends the loop: nothing new starts, what is in progress is told to stop (a submission already
   * sent is still watched by the sender), and the loop is awaited at most `stopTimeoutMs`.
   */
  stop(): Promise<void>
}
