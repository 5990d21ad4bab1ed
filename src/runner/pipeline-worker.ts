import type { ConnectionOptions } from 'bullmq'
import { rootCauseFirst, serialiseError } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
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
import { causeIn, finish, outcomeOf, runFailures, type RequestOutcome } from './run-outcomes.ts'
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
  const { runs } = options
  const jobLog = log.child({ job: loaded.name })
  // Every write carries the request: one that finds the run gone (Redis flushed or failed over
  // meanwhile) makes it again whole, so the reconciler can still settle it from the chain.
  const write = (patch: RunPatch) => runs.update(request.requestId, { ...base, ...patch })
  // A run that is final already (a late redelivery, a cancel) is left as it is: the write says so.
  const started = await write({ state: 'running' })
  if (isFinal(started.state)) return outcomeOf(started)
  jobLog.info('run started')
  const startedAt = performance.now()
  const tasks: TaskRecord[] = []
  // The tasks the record holds: the last write sends only those after them (RunPatch.tasksFrom).
  let stored = 0
  const unstoredTasks = () => ({ ...base, tasks: tasks.slice(stored), tasksFrom: stored })
  const onSent = async (): Promise<void> => {
    // The record's word for where the run is, written while the transaction is on its way: a failed
    // write must not fail a transaction that may already be out.
    const sentTasks = [...tasks]
    await write({ state: 'sent', tasks: sentTasks })
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
    requester: request.requester.toLowerCase(),
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
    const ended = endedUnsent(result.failures)
    if (ended)
      return finish(
        runs,
        request.requestId,
        { ...unstoredTasks(), failure: serialiseError(ended.error) },
        ended.state,
        ended.error.message,
        jobLog,
        { job: loaded.name, reason: ended.reason, startedAt },
      )
    const crashed = causeIn(result.failures, RunCrashedError)
    if (crashed) {
      await write({
        tasks,
        reason: `will retry: the run crashed: ${rootCauseFirst(failures[0])}`,
        failure: serialiseError(failures[0]),
      })
      throw new RunCrashReport(failures[0] ?? crashed)
    }
    // Whether to try again is what the task that failed first declared (its error's retryable
    // flag, set where the failure arose), and nothing else.
    const [first] = failures
    if (first?.retryable && !options.lastAttempt) {
      const words = rootCauseFirst(first)
      await write({
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
 * transaction and signs none new (sender-chain-access.ts), so the run ends as the chain says.
 */
async function expiryOf(
  request: OracleRequestEvent,
  loaded: LoadedJob,
  runId: string,
  options: Pick<PipelineWorkerOptions, 'chainTime' | 'transactionOut'>,
): Promise<RequestRefusedError | undefined> {
  if (!options.chainTime) return undefined
  if (BigInt(await options.chainTime()) < request.cancelExpiration) return undefined
  const sends = loaded.job.tasks.filter((task) => task.type === 'ethtx')
  if (await options.transactionOut?.(sends.map((task) => `${runId}:${task.id}`))) return undefined
  return expiredRefusal(request.cancelExpiration)
}
