import { Worker, type ConnectionOptions, type Job as QueueJob } from 'bullmq'
import {
  FeedrunnerError,
  rootCauseFirst,
  serialiseError,
  withContext,
  type ErrorKind,
} from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { TaskFailure } from '../pipeline/index.ts'
import type { ChainAccess, RunOptions, TaskOutcome } from '../pipeline/index.ts'
import { originOf, runJob } from '../pipeline/index.ts'
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
import { asFailedReason } from '../queue/failed-reason.ts'
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
  /**
   * Chain access for one run; `onSent` marks the run as sent when its transaction leaves. A run that
   * is `retried` (an earlier delivery failed or its process died) simulates its transactions first:
   * by now its request may have been answered or cancelled.
   */
  chainAccessFor: (
    requestId: string,
    onSent: () => Promise<void>,
    run: { retried: boolean },
  ) => ChainAccess
  /** Extra run options (aliases, environment with BRIDGE_<NAME>_URL, ...). */
  runOptions?: Partial<RunOptions>
  logger: Logger
  /**
   * When the bridge could not be reached or timed out (adapter restarting, fetch workers gone), throw
   * instead of recording the run as errored, so the queue runs it again after its backoff.
   */
  retryTransient?: boolean
  /** This delivery is not the request's first (see chainAccessFor). */
  retried?: boolean
  /** Per-requester bounds (REQUESTER_MAX_CONCURRENT_RUNS, REQUESTER_MAX_REQUESTS_PER_MINUTE). */
  admission?: RequesterAdmission
  /** Characters of a task's output kept in the run record (TASK_OUTPUT_MAX_CHARS). */
  outputMaxChars?: number
  /** The number of this `runs replay` of an errored run; undefined for a request's own run. */
  replay?: number
}

/** Thrown to hand a request back to the queue: nothing was sent, the failure is the bridge's reachability. */
export class TransientRunError extends FeedrunnerError {
  override readonly name = 'TransientRunError'
  constructor(message: string, cause?: unknown) {
    super(message, { kind: 'unavailable', retryable: true, cause })
  }
}

/**
 * A bridge failure worth another try later, by its kind: `unavailable` (the adapter could not be
 * reached, or answered 503: its Redis is down) or `timeout` (it answered 504: the fetch did not finish
 * in time, or the task timed out). A 502 (the feed service failed after the adapter's own retries,
 * kind `upstream`) and every 4xx are final.
 */
const TRANSIENT_BRIDGE_KINDS: ReadonlySet<ErrorKind> = new Set(['unavailable', 'timeout'])

function transientBridgeFailure(tasks: readonly TaskOutcome[]): TaskOutcome | undefined {
  if (tasks.some((task) => task.type === 'ethtx' && task.ok)) return undefined
  const failed = tasks.find(
    (task) =>
      task.type === 'bridge' &&
      !task.ok &&
      task.failure !== undefined &&
      TRANSIENT_BRIDGE_KINDS.has(task.failure.kind),
  )
  // An ethtx that timed out may still be mined (its transaction was signed by a process that died):
  // running the request again finds the same signed attempt in the tx store through its idempotency
  // key and sends those bytes again, so it cannot send twice.
  // Only the ethtx's own wait: an ethtx whose input failed (an http task that timed out on a
  // source dripping a byte a second) sent nothing, and running it again would only fetch again
  // (issue 23: such a run stayed `running` through five deliveries).
  // So may one whose node did not answer (every RPC endpoint of the chain away): its nonce is taken
  // and its attempt stored, and a nonce left unsent would hold back every later transaction of the key.
  const waitedForTx = tasks.find(
    (task) =>
      task.type === 'ethtx' &&
      !task.ok &&
      task.failure !== undefined &&
      TRANSIENT_BRIDGE_KINDS.has(task.failure.kind) &&
      !failedThroughInput(task.failure),
  )
  return failed ?? waitedForTx
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

/** A task failure that only passes on an input task's failure (its cause chain holds a TaskFailure). */
function failedThroughInput(failure: Error): boolean {
  for (let at: unknown = failure.cause; at instanceof Error; at = at.cause)
    if (at instanceof TaskFailure) return true
  return false
}

export interface RequestOutcome {
  state: RunState
  reason?: string
  txHash?: string
}

/** The worker of the `requests` queue: admits a request, runs its job's pipeline, records the run. */
export function createPipelineWorker(options: PipelineWorkerOptions): Worker {
  const process = async (queueJob: QueueJob): Promise<RequestOutcome> => {
    // The last delivery records a transient failure as the run's end; earlier ones hand the request back.
    const lastAttempt = queueJob.attemptsMade + 1 >= (queueJob.opts.attempts ?? 1)
    const replay = replayOf(queueJob.data)
    // A replay simulates first too: its request may have been answered or cancelled since.
    const retried = queueJob.attemptsMade > 0 || queueJob.stalledCounter > 0 || replay !== undefined
    try {
      return await runRequest(fromRequestPayload(queueJob.data), {
        ...options,
        retryTransient: !lastAttempt,
        retried,
        replay,
      })
    } catch (error) {
      // The failed job's reason is the error with its kind, for whoever reads it (failedReasonError).
      throw asFailedReason(error)
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
    chain: options.chainAccessFor(request.requestId, onSent, { retried: options.retried === true }),
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
    const transient = options.retryTransient ? transientBridgeFailure(result.tasks) : undefined
    if (transient?.failure) {
      const [failure] = runFailures(request, loaded.name, [transient.failure])
      const words = rootCauseFirst(failure)
      await runs.update(request.requestId, {
        tasks,
        reason: `will retry: ${words}`,
        failure: serialiseError(failure),
      })
      // A debug line: the run record keeps the reason ("will retry: ..."), an adapter that cannot be
      // reached is reported once by the bridge's outage report (RunContext.bridgeReach), and an
      // outage elsewhere (Redis, the feed service) by that dependency's; a line per run buried it
      // (a 30 s Redis outage under load: one per run that timed out meanwhile). A run's last failure
      // is told as `run errored`.
      jobLog.debug(
        { reason: words, kind: failure!.kind },
        'bridge unavailable: the request goes back to the queue',
      )
      throw new TransientRunError(`will retry: ${words}`, failure)
    }
    const failures = runFailures(request, loaded.name, result.failures)
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

function outcomeOf(run: RunSummary): RequestOutcome {
  return { state: run.state, reason: run.reason, txHash: run.txHash }
}
