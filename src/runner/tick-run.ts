import type { Job as QueueJob } from 'bullmq'
import { FeedrunnerError, rootCauseFirst, serialiseError, withContext } from '../config/errors.ts'
import { errorClass, observeTask } from '../metrics/index.ts'
import { originOf, parseSchedule, runJob } from '../pipeline/index.ts'
import type { LoadedJob } from './job-registry.ts'
import type { PipelineWorkerOptions } from './pipeline-worker.ts'
import { finish, outcomeOf, type RequestOutcome } from './run-outcomes.ts'
import { sentTxHash, taskRecord } from './run-fields.ts'
import { isFinal, type RunPatch, type RunRecord, type TaskRecord } from './run-record.ts'
import { claimTick, tickRunId, type TickPayload } from './ticks.ts'

/** A tick that could not be named: Redis's clock is not read yet. It goes back to the queue. */
class ClockUnreadError extends FeedrunnerError {
  override readonly name = 'ClockUnreadError'
  constructor() {
    super("a cron tick is named by Redis's clock, which this runner has not read yet", {
      kind: 'unavailable',
    })
  }
}

/**
 * Runs one firing of a cron job's schedule: claims the tick its time is nearest to by Redis's clock
 * (once across every runner: a duplicate firing does nothing), then runs the job's pipeline as a
 * request's is run (the same worker, retry policy, sender and run record, its trigger `tick`).
 */
export async function runTick(
  queueJob: QueueJob<TickPayload>,
  options: PipelineWorkerOptions & { lastAttempt?: boolean },
): Promise<RequestOutcome | undefined> {
  const payload = queueJob.data
  const loaded = options.registry.jobs.find(
    (job) => job.externalJobId === payload.externalJobId && job.job.spec.type === 'cron',
  )
  const spec = loaded?.job.spec
  // A job removed while its firing waited: its schedule is removed too (syncCronSchedules).
  if (!loaded || spec?.type !== 'cron') return undefined
  const parsed = parseSchedule(spec.schedule)
  const now = options.ticks?.now()
  if (!('schedule' in parsed) || !options.ticks) return undefined
  if (now === undefined) throw new ClockUnreadError()
  const tick = await claimTick(
    options.ticks.redis,
    options.prefix,
    payload,
    String(queueJob.id),
    now,
    parsed.schedule,
  )
  if (tick === undefined) return undefined
  return runClaimedTick(loaded, tick, options)
}

function tickBase(loaded: LoadedJob, chainId: number, tick: number): Partial<RunRecord> {
  return {
    chainId,
    trigger: 'tick',
    tickAt: tick,
    job: loaded.name,
    externalJobId: loaded.externalJobId,
    operator: '',
    requester: '',
    payment: '0',
    blockNumber: 0,
    requestTxHash: '',
  }
}

async function runClaimedTick(
  loaded: LoadedJob,
  tick: number,
  options: PipelineWorkerOptions & { lastAttempt?: boolean },
): Promise<RequestOutcome> {
  const { runs } = options
  const runId = tickRunId(loaded.externalJobId, tick)
  const chainId = runs.chainId ?? 0
  const base = tickBase(loaded, chainId, tick)
  const log = options.logger.child({ job: loaded.name, runId, tick: new Date(tick).toISOString() })
  const write = (patch: RunPatch) => runs.update(runId, { ...base, ...patch })
  const started = await write({ state: 'running' })
  if (isFinal(started.state)) return outcomeOf(started)
  const startedAt = performance.now()
  const tasks: TaskRecord[] = []
  const onSent = async () => {
    await write({ state: 'sent', tasks: [...tasks] }).catch(() => undefined)
  }
  const result = await runJob(loaded.job, {
    ...options.runOptions,
    runId,
    // Isolates are shared fairly between requesters; a cron job is its own.
    requester: `cron:${loaded.externalJobId}`,
    signal: options.signal,
    chain: options.chainAccessFor(undefined, onSent),
    jobRun: { meta: { cron: { tick } } },
    onTask: (outcome) => {
      tasks.push(taskRecord(outcome, options.outputMaxChars))
      if (!outcome.skipped)
        observeTask(loaded.name, outcome.type, outcome.ok, outcome.durationMs / 1_000)
    },
  })
  const txHash = sentTxHash(result.tasks)
  const metrics = { job: loaded.name, startedAt }
  if (result.ok)
    return finish(runs, runId, { ...base, tasks, txHash }, 'fulfilled', undefined, log, {
      ...metrics,
      reason: 'none',
    })
  const failures = result.failures.map((failure) =>
    withContext(
      `tick ${new Date(tick).toISOString()}`,
      withContext(`job ${loaded.name}`, originOf(failure)),
    ),
  )
  const [first] = failures
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
