import type { ConnectionOptions } from 'bullmq'
import type { Redis } from 'ioredis'
import { FeedrunnerError, rootCauseFirst, serialiseError } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { expiredUnsent } from '../chain/request-fate.ts'
import type { ChainAccess, RunOptions } from '../pipeline/index.ts'
import { runJob, RunCrashedError } from '../pipeline/index.ts'
import { RequestCancelledError } from './sender-chain-access.ts'
import { errorClass, observeTask, refusalClass, type ReasonClass } from '../metrics/index.ts'
import type { JobRegistry, LoadedJob } from './job-registry.ts'
import { baseRecord, sentTxHash, taskRecord } from './run-fields.ts'
import {
  expiredRefusal,
  refusalOf,
  RequestRefusedError,
  type RequesterAdmission,
} from './admission.ts'
import { jobRunVars, requestJobId } from './request-payload.ts'
import { RunCrashReport } from './quarantine.ts'
import type { TickChain } from './tick-chain.ts'
import {
  causeIn,
  finish,
  outcomeOf,
  runFailures,
  type RequestOutcome,
  type RunMetrics,
} from './run-outcomes.ts'
import {
  isFinal,
  type RunPatch,
  type RunRecord,
  type RunStore,
  type TaskRecord,
} from './run-record.ts'

export type { RequestOutcome } from './run-outcomes.ts'

export interface PipelineWorkerOptions {
  queueName: string
  connection: ConnectionOptions
  prefix: string
  concurrency: number
  lockDurationMs: number
  registry: JobRegistry
  runs: RunStore
  /** Chain access for one run; `onSent` marks the run as sent when its transaction leaves. */
  chainAccessFor: (
    request: OracleRequestEvent | undefined,
    onSent: () => Promise<void>,
  ) => ChainAccess
  /**
   * What a cron job's tick needs beside: Redis for its claim, Redis's clock to name it, the chain to
   * tell a tick written already whose claim Redis lost.
   */
  ticks?: { redis: Redis; now: () => number | undefined; chain?: TickChain }
  /** Extra run options (aliases, environment with BRIDGE_<NAME>_URL, ...). */
  runOptions?: Partial<RunOptions>
  logger: Logger
  /**
   * The request's last try: a retryable failure (as its task declared it) is recorded as the run's
   * end instead of being thrown for the queue to try again after its backoff.
   */
  lastAttempt?: boolean
  /** Stops the run (the process is closing: its tasks fail retryably and the request goes back). */
  signal?: AbortSignal
  /** Per-requester bounds (REQUESTER_MAX_CONCURRENT_RUNS, REQUESTER_MAX_REQUESTS_PER_MINUTE). */
  admission?: RequesterAdmission
  /** Characters of a task's output kept in the run record (TASK_OUTPUT_MAX_CHARS). */
  outputMaxChars?: number
  /** The number of this `runs replay` of an errored run; undefined for a request's own run. */
  replay?: number
  /** The request's round (made again after a reorg): its transactions are the round's own. */
  round?: number
  /** RUN_MAX_CRASHES: crashes of a request's runs before it is quarantined (requests-worker.ts). */
  maxCrashes?: number
  /** The chain's time (unix seconds): a request past its cancelExpiration is not run. */
  chainTime?: () => Promise<number>
  /** Whether any of these ethtx idempotency keys has a transaction already (the sender's records). */
  transactionOut?: (idempotencyKeys: readonly string[]) => Promise<boolean>
}

/** Runs one request to a final state. Exported for `feedrunner jobs run --from-chain`-style use and tests. */
export async function runRequest(
  request: OracleRequestEvent,
  options: PipelineWorkerOptions,
): Promise<RequestOutcome> {
  const { registry, runs, logger } = options
  // A replay's transactions get idempotency keys of their own: the errored run's may be spent. The
  // Operator's commitment still lets only one fulfilment through.
  const runId =
    requestJobId(request.chainId, request.operator, request.requestId, options.round) +
    (options.replay === undefined ? '' : `-replay-${options.replay}`)
  const log = logger.child({ requestId: request.requestId })
  const loaded = registry.bySpecId(request.specId)
  const base = baseRecord(request, loaded)
  const refuse = async (
    refusal: RequestRefusedError,
    job: string | undefined,
  ): Promise<RequestOutcome> => {
    // A run that is final already (a redelivery) is neither written nor counted again.
    const existing = await runs.get(request.requestId)
    if (existing && isFinal(existing.state)) return outcomeOf(existing)
    return finish(
      runs,
      request.requestId,
      { ...base, failure: serialiseError(refusal) },
      'refused',
      refusal.message,
      log.child({ job: job ?? '(unknown)' }),
      { job, reason: refusalClass(refusal) },
    )
  }
  // The registry answers a spec id with directrequest jobs only; a job of another type is no request's.
  if (loaded?.job.spec.type !== 'directrequest')
    return refuse(
      new RequestRefusedError('unknown_job', `no job with spec id ${request.specId}`),
      undefined,
    )
  const refusal =
    refusalOf(loaded.job.spec, request) ?? (await expiryOf(request, loaded, runId, options))
  if (refusal) return refuse(refusal, loaded.name)
  const admitted = await options.admission?.admit(request.requester, request.requestId)
  if (admitted && !admitted.ok)
    return refuse(new RequestRefusedError(admitted.reasonClass, admitted.reason), loaded.name)
  try {
    return await runAdmitted(request, loaded, base, runId, log, options)
  } finally {
    admitted?.release()
  }
}

/** Runs an admitted request's pipeline and records its end. */
async function runAdmitted(
  request: OracleRequestEvent,
  loaded: LoadedJob,
  base: Partial<RunRecord>,
  runId: string,
  log: Logger,
  options: PipelineWorkerOptions,
): Promise<RequestOutcome> {
  const record = new RunningRecord(options.runs, request.requestId, base, log, loaded.name)
  // A run that is final already (a late redelivery, a cancel) is left as it is: the write says so.
  const started = await record.write({ state: 'running' })
  if (isFinal(started.state)) return outcomeOf(started)
  record.log.info('run started')
  const startedAt = performance.now()
  const result = await runJob(loaded.job, {
    ...options.runOptions,
    runId,
    requester: request.requester.toLowerCase(),
    signal: options.signal,
    chain: options.chainAccessFor(request, () => record.markSent()),
    jobRun: jobRunVars(request),
    onTask: (outcome) => {
      record.addTask(taskRecord(outcome, options.outputMaxChars))
      record.log.debug(
        { task: outcome.id, ok: outcome.ok, ms: outcome.durationMs },
        'task finished',
      )
      if (!outcome.skipped)
        observeTask(loaded.name, outcome.type, outcome.ok, outcome.durationMs / 1_000)
    },
  })
  const txHash = sentTxHash(result.tasks)
  const metrics = { job: loaded.name, startedAt, replay: options.replay }
  if (result.ok)
    return record.finish({ txHash }, 'fulfilled', undefined, { ...metrics, reason: 'none' })
  const failures = runFailures(request, loaded.name, result.failures)
  const end = await failedRunEnd(result.failures, failures, record, options.lastAttempt)
  if (end.state === 'errored') {
    const reason = failures.map(rootCauseFirst).join(' | ') || 'the pipeline failed'
    const failure = failures[0] ? { failure: serialiseError(failures[0]) } : {}
    return record.finish({ txHash, ...failure }, 'errored', reason, {
      ...metrics,
      reason: errorClass(result.tasks),
    })
  }
  return record.finish({ failure: serialiseError(end.error) }, end.state, end.error.message, {
    job: loaded.name,
    reason: end.reason,
    startedAt,
  })
}

/**
 * The record of a run while it runs: every write carries the request, so one that finds the run gone
 * (Redis flushed or failed over meanwhile) makes it again whole and the reconciler can still settle
 * it from the chain; the tasks finished so far, of which the last write sends only the unstored ones
 * (RunPatch.tasksFrom).
 */
class RunningRecord {
  readonly log: Logger
  private readonly tasks: TaskRecord[] = []
  private stored = 0

  constructor(
    private readonly runs: RunStore,
    readonly runId: string,
    private readonly base: Partial<RunRecord>,
    log: Logger,
    readonly job: string,
  ) {
    this.log = log.child({ job })
  }

  write(patch: RunPatch): ReturnType<RunStore['update']> {
    return this.runs.update(this.runId, { ...this.base, ...patch })
  }

  addTask(task: TaskRecord): void {
    this.tasks.push(task)
  }

  /** Every task so far, with why the run goes back to the queue. */
  async willRetry(reason: string, error: Error | undefined): Promise<void> {
    await this.write({
      tasks: this.tasks,
      reason: `will retry: ${reason}`,
      ...(error ? { failure: serialiseError(error) } : {}),
    })
  }

  /**
   * The record's word for where the run is, written while the transaction is on its way: a failed
   * write must not fail a transaction that may already be out.
   */
  async markSent(): Promise<void> {
    const sentTasks = [...this.tasks]
    await this.write({ state: 'sent', tasks: sentTasks })
      .then(() => void (this.stored = sentTasks.length))
      .catch((error: unknown) => {
        this.log.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'could not mark the run as sent',
        )
      })
  }

  /** The run's end, with the tasks the record does not hold yet. */
  finish(
    patch: RunPatch,
    state: RunRecord['state'],
    reason: string | undefined,
    metrics: RunMetrics,
  ): Promise<RequestOutcome> {
    const unstored = { tasks: this.tasks.slice(this.stored), tasksFrom: this.stored }
    return finish(
      this.runs,
      this.runId,
      { ...this.base, ...unstored, ...patch },
      state,
      reason,
      this.log,
      metrics,
    )
  }
}

/**
 * How a failed run ends: with nothing sent for a reason of the chain's (cancelled, refused), or
 * errored; a crash or a retryable failure with tries left goes back to the queue instead (thrown,
 * after the record says why).
 */
async function failedRunEnd(
  taskFailures: readonly Error[],
  failures: readonly FeedrunnerError[],
  record: RunningRecord,
  lastAttempt: boolean | undefined,
): Promise<NonNullable<ReturnType<typeof endedUnsent>> | { state: 'errored' }> {
  const ended = endedUnsent(taskFailures)
  if (ended) return ended
  const [first] = failures
  const crashed = causeIn(taskFailures, RunCrashedError)
  if (crashed) {
    await record.willRetry(`the run crashed: ${rootCauseFirst(first)}`, first)
    throw new RunCrashReport(first ?? crashed, record.runId, record.job)
  }
  // Whether to try again is what the task that failed first declared (its error's retryable
  // flag, set where the failure arose), and nothing else.
  if (first?.retryable && !lastAttempt) {
    const words = rootCauseFirst(first)
    await record.willRetry(words, first)
    // A debug line: the run record keeps the reason, an adapter away is reported once by the
    // bridge's outage report, and a run's last failure is told as `run errored`.
    record.log.debug(
      { reason: words, kind: first.kind },
      'run failed retryably: the request goes back to the queue',
    )
    throw first
  }
  return { state: 'errored' }
}

/**
 * A run that ends with nothing sent for a reason of the chain's: its requester cancelled it, or it
 * passed its cancelExpiration (sender-chain-access.ts). Undefined for any other failure.
 */
function endedUnsent(
  failures: readonly Error[],
): { state: 'cancelled' | 'refused'; error: Error; reason: ReasonClass } | undefined {
  const cancelled = causeIn(failures, RequestCancelledError)
  if (cancelled) return { state: 'cancelled', error: cancelled, reason: 'cancelled' }
  const refused = causeIn(failures, RequestRefusedError)
  if (refused) return { state: 'refused', error: refused, reason: refusalClass(refused) }
  return undefined
}

/**
 * A request past its cancelExpiration (by the chain's time) is not run: its requester may cancel it
 * and take its payment back at any moment, and a poison request must not outlive it. A run that had
 * a transaction out (its process closed or died after sending) goes on: the sender resumes that
 * transaction and signs none new, so the run ends as the chain says (request-fate.ts expiredUnsent).
 */
async function expiryOf(
  request: OracleRequestEvent,
  loaded: LoadedJob,
  runId: string,
  options: Pick<PipelineWorkerOptions, 'chainTime' | 'transactionOut'>,
): Promise<RequestRefusedError | undefined> {
  const { chainTime, transactionOut } = options
  if (!chainTime) return undefined
  const sends = loaded.job.tasks.filter((task) => task.type === 'ethtx')
  const unsent = await expiredUnsent(request.cancelExpiration, {
    chainTime,
    transactionOut: async () =>
      (await transactionOut?.(sends.map((task) => `${runId}:${task.id}`))) ?? false,
  })
  return unsent ? expiredRefusal(request.cancelExpiration) : undefined
}
