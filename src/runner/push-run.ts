import { rootCauseFirst, serialiseError, withContext } from '../config/errors.ts'
import { errorClass, observeTask } from '../metrics/index.ts'
import { originOf, runJob, RunCrashedError } from '../pipeline/index.ts'
import type { LoadedJob } from './job-registry.ts'
import type { PipelineWorkerOptions } from './pipeline-worker.ts'
import { quarantine, RunCrashReport, type RunAttempt } from './quarantine.ts'
import { causeIn, finish, outcomeOf, type RequestOutcome } from './run-outcomes.ts'
import { sentTxHash, taskRecord } from './run-fields.ts'
import { isFinal, type RunPatch, type RunRecord, type TaskRecord } from './run-record.ts'

/**
 * Runs a job no request started (a cron job's tick, a webhook call) as a request's run is run: the
 * same worker and retry policy (a retryable failure goes back to the queue), the same sender for its
 * ethtx, one run record with its trigger. A run that is final already (its queue job taken again) is
 * left as it is.
 */
export async function runPushed(
  loaded: LoadedJob,
  runId: string,
  base: Partial<RunRecord>,
  jobRun: Record<string, unknown>,
  what: string,
  options: PipelineWorkerOptions & RunAttempt,
): Promise<RequestOutcome> {
  const { runs } = options
  const log = options.logger.child({ job: loaded.name, runId, trigger: base.trigger })
  const write = (patch: RunPatch) => runs.update(runId, { ...base, ...patch })
  const started = await write({ state: 'running' })
  if (isFinal(started.state)) return outcomeOf(started)
  if (options.crashes >= options.maxCrashes)
    return quarantine(runs, runId, options.crashes, undefined, log, loaded.name)
  const startedAt = performance.now()
  const tasks: TaskRecord[] = []
  const onSent = async () => {
    await write({ state: 'sent', tasks: [...tasks] }).catch(() => undefined)
  }
  const result = await runJob(loaded.job, {
    ...options.runOptions,
    runId,
    // Isolates are shared fairly between requesters; a pushed job is its own.
    requester: `${base.trigger ?? 'run'}:${loaded.externalJobId}`,
    signal: options.signal,
    chain: options.chainAccessFor(undefined, onSent),
    jobRun,
    onTask: (outcome) => {
      tasks.push(taskRecord(outcome, options.outputMaxChars))
      if (!outcome.skipped)
        observeTask(loaded.name, outcome.type, outcome.ok, outcome.durationMs / 1_000)
    },
  })
  const txHash = sentTxHash(result.tasks)
  const metrics = {
    job: loaded.name,
    startedAt,
    trigger: base.trigger === 'tick' ? 'tick' : 'call',
  } as const
  if (result.ok)
    return finish(runs, runId, { ...base, tasks, txHash }, 'fulfilled', undefined, log, {
      ...metrics,
      reason: 'none',
    })
  const failures = result.failures.map((failure) =>
    withContext(what, withContext(`job ${loaded.name}`, originOf(failure))),
  )
  const [first] = failures
  const crashed = causeIn(result.failures, RunCrashedError)
  if (crashed) {
    await write({ tasks, reason: `the run crashed: ${rootCauseFirst(first)}` })
    throw new RunCrashReport(first ?? crashed, runId, loaded.name)
  }
  if (first?.retryable && !options.lastAttempt) {
    await write({
      tasks,
      reason: `will retry: ${rootCauseFirst(first)}`,
      failure: serialiseError(first),
    })
    throw first
  }
  return finish(
    runs,
    runId,
    { ...base, tasks, txHash, ...(first ? { failure: serialiseError(first) } : {}) },
    'errored',
    failures.map(rootCauseFirst).join(' | ') || 'the pipeline failed',
    log,
    { ...metrics, reason: errorClass(result.tasks) },
  )
}
