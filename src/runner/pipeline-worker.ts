import { UnrecoverableError, Worker, type ConnectionOptions, type Job as QueueJob } from 'bullmq'
import {
  FeedrunnerError,
  isRetryable,
  rootCauseFirst,
  serialiseError,
  withContext,
} from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
import type { ChainAccess, RunOptions, TaskFailure } from '../pipeline/index.ts'
import { originOf, runJob } from '../pipeline/index.ts'
import { isRedisUnavailable } from '../queue/connection.ts'
import { RequestCancelledError } from './sender-chain-access.ts'
import {
  errorClass,
  observeRun,
  observeTask,
  recordReplay,
  recordRequest,
  refusalClass,
  type ReasonClass,
} from '../metrics/index.ts'
import type { JobRegistry, LoadedJob } from './job-registry.ts'
import { baseRecord, sentTxHash, taskRecord } from './run-fields.ts'
import { refusalOf, RequestRefusedError, type RequesterAdmission } from './admission.ts'
import { fromRequestPayload, jobRunVars, replayOf, requestJobId } from './request-payload.ts'
import {
  isFinal,
  type RunPatch,
  type RunRecord,
  type RunState,
  type RunStore,
  type RunSummary,
  type TaskRecord,
} from './run-record.ts'

export interface PipelineWorkerOptions {
  queueName: string
  connection: ConnectionOptions
  prefix: string
  concurrency: number
  lockDurationMs: number
  registry: JobRegistry
  runs: RunStore
  /** Chain access for one run; `onSent` marks the run as sent when its transaction leaves. */
  chainAccessFor: (request: OracleRequestEvent, onSent: () => Promise<void>) => ChainAccess
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
}

/**
 * A run's failure in words, root cause first, then where: the task it began in, the job, the request
 * ("the feed service answered 404: no match; task fetch, job game-odds, request 0x4f1c"). Terminal
 * tasks that failed for one origin are told once.
 */
function runFailures(
  request: OracleRequestEvent,
  job: string,
  failures: readonly TaskFailure[],
): FeedrunnerError[] {
  const seen = new Set<string>()
  const origins: FeedrunnerError[] = []
  for (const failure of failures) {
    const origin = originOf(failure)
    if (seen.has(origin.message)) continue
    seen.add(origin.message)
    origins.push(withContext(`request ${request.requestId}`, withContext(`job ${job}`, origin)))
  }
  return origins
}

export interface RequestOutcome {
  state: RunState
  reason?: string
  txHash?: string
}

/** The worker of the `requests` queue: admits a request, runs its job's pipeline, records the run. */
export function createPipelineWorker(options: PipelineWorkerOptions): Worker {
  const process = async (queueJob: QueueJob): Promise<RequestOutcome> => {
    // The last try records a retryable failure as the run's end; earlier ones hand the request back.
    const lastAttempt = queueJob.attemptsMade + 1 >= (queueJob.opts.attempts ?? 1)
    try {
      return await runRequest(fromRequestPayload(queueJob.data), {
        ...options,
        lastAttempt,
        replay: replayOf(queueJob.data),
      })
    } catch (error) {
      // A retryable failure goes back with the queue's backoff (the run record says why); anything
      // else is not tried again. The decision reads the error's flag, never its words.
      if (isRetryable(error) || isRedisUnavailable(error)) throw error
      throw new UnrecoverableError(rootCauseFirst(error))
    }
  }
  return new Worker(options.queueName, process, {
    connection: options.connection,
    prefix: options.prefix,
    concurrency: options.concurrency,
    lockDuration: options.lockDurationMs,
    stalledInterval: Math.max(1_000, Math.floor(options.lockDurationMs / 2)),
    // A stalled request is run again: the sender's idempotency key and the Operator's commitment make
    // a second run harmless, so a crash never strands a request.
    maxStalledCount: 1_000,
    autorun: false,
  })
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
    requestJobId(request.chainId, request.operator, request.requestId) +
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
  if (!loaded)
    return refuse(
      new RequestRefusedError('unknown_job', `no job with spec id ${request.specId}`),
      undefined,
    )
  const refusal = refusalOf(loaded.job.spec, request)
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
  const { runs } = options
  const jobLog = log.child({ job: loaded.name })
  // A run that is final already (a late redelivery, a cancel) is left as it is: the write says so.
  const started = await runs.update(request.requestId, { ...base, state: 'running' })
  if (isFinal(started.state)) return outcomeOf(started)
  jobLog.info('run started')
  const startedAt = performance.now()
  const tasks: TaskRecord[] = []
  // The tasks the record holds: the last write sends only those after them (RunPatch.tasksFrom).
  let stored = 0
  const unstoredTasks = () => ({ tasks: tasks.slice(stored), tasksFrom: stored })
  const onSent = async (): Promise<void> => {
    // The record's word for where the run is, written while the transaction is on its way: a failed
    // write must not fail a transaction that may already be out.
    const sentTasks = [...tasks]
    await runs
      .update(request.requestId, { state: 'sent', tasks: sentTasks })
      .then(() => void (stored = sentTasks.length))
      .catch((error: unknown) => {
        jobLog.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'could not mark the run as sent',
        )
      })
  }
  const result = await runJob(loaded.job, {
    ...options.runOptions,
    runId,
    signal: options.signal,
    chain: options.chainAccessFor(request, onSent),
    jobRun: jobRunVars(request),
    onTask: (outcome) => {
      tasks.push(taskRecord(outcome, options.outputMaxChars))
      jobLog.debug({ task: outcome.id, ok: outcome.ok, ms: outcome.durationMs }, 'task finished')
      if (!outcome.skipped)
        observeTask(loaded.name, outcome.type, outcome.ok, outcome.durationMs / 1_000)
    },
  })
  const txHash = sentTxHash(result.tasks)
  if (!result.ok) {
    const failures = runFailures(request, loaded.name, result.failures)
    const cancelled = cancellationOf(result.failures)
    if (cancelled)
      return finish(
        runs,
        request.requestId,
        unstoredTasks(),
        'cancelled',
        cancelled.message,
        jobLog,
        { job: loaded.name, reason: 'cancelled', startedAt },
      )
    // Whether to try again is what the task that failed first declared (its error's retryable
    // flag, set where the failure arose), and nothing else.
    const [first] = failures
    if (first?.retryable && !options.lastAttempt) {
      const words = rootCauseFirst(first)
      await runs.update(request.requestId, {
        tasks,
        reason: `will retry: ${words}`,
        failure: serialiseError(first),
      })
      // A debug line: the run record keeps the reason, an adapter away is reported once by the
      // bridge's outage report, and a run's last failure is told as `run errored`.
      jobLog.debug(
        { reason: words, kind: first.kind },
        'run failed retryably: the request goes back to the queue',
      )
      throw first
    }
    const reason = failures.map(rootCauseFirst).join(' | ') || 'the pipeline failed'
    return finish(
      runs,
      request.requestId,
      {
        ...unstoredTasks(),
        txHash,
        ...(failures[0] ? { failure: serialiseError(failures[0]) } : {}),
      },
      'errored',
      reason,
      jobLog,
      { job: loaded.name, reason: errorClass(result.tasks), startedAt, replay: options.replay },
    )
  }
  return finish(
    runs,
    request.requestId,
    { ...unstoredTasks(), txHash },
    'fulfilled',
    undefined,
    jobLog,
    {
      job: loaded.name,
      reason: 'none',
      startedAt,
      replay: options.replay,
    },
  )
}

/** What a finished run adds to the metrics: its job, a reason class (never the free text) and its start. */
interface RunMetrics {
  job?: string
  reason: ReasonClass
  startedAt?: number
  /** Set when the run is a replay: counted in feedrunner_replays_total too. */
  replay?: number
}

async function finish(
  runs: RunStore,
  requestId: string,
  patch: RunPatch,
  state: RunState,
  reason: string | undefined,
  log: Logger,
  metrics: RunMetrics,
): Promise<RequestOutcome> {
  const stored = await runs.update(requestId, { ...patch, state, ...(reason ? { reason } : {}) })
  // Counted once, by the delivery that moved the run to its final state (not when it was final already).
  if (
    stored.state === state &&
    (state === 'fulfilled' || state === 'errored' || state === 'refused')
  ) {
    recordRequest(metrics.job, state, metrics.reason)
    if (metrics.replay !== undefined) recordReplay(metrics.job, state)
    if (metrics.startedAt !== undefined)
      observeRun(metrics.job, state, (performance.now() - metrics.startedAt) / 1_000)
  }
  if (state === 'fulfilled') log.info({ txHash: stored.txHash }, 'run fulfilled')
  else
    log.warn({ state, reason, kind: patch.failure?.kind, replay: metrics.replay }, `run ${state}`)
  return outcomeOf(stored)
}

/** The cancel a run met (its fulfilment's simulation found the request cancelled on chain), if any. */
function cancellationOf(failures: readonly TaskFailure[]): RequestCancelledError | undefined {
  for (const failure of failures)
    for (let at: unknown = failure; at instanceof Error; at = at.cause)
      if (at instanceof RequestCancelledError) return at
  return undefined
}

function outcomeOf(run: RunSummary): RequestOutcome {
  return { state: run.state, reason: run.reason, txHash: run.txHash }
}
