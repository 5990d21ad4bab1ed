import { errorKindOf, FeedrunnerError, isRetryable, withContext } from '../config/errors.ts'
import { parseDuration } from './duration.ts'
import type { BlockRoots } from './chain-access.ts'
import type { Job, PipelineTask } from './job-spec/loader.ts'
import { jobSpecVars, withBlockRoots } from './run-vars.ts'
import { createTaskRun, TaskError, withCause, type RunContext, type TaskInput } from './task.ts'
import { TASK_TYPES } from './tasks/index.ts'
import { IsolatedRuns } from './isolation/isolated-run.ts'
import type { Vars } from './vars.ts'

/**
 * Runs a job's DAG with Chainlink's semantics: a task starts when every task it depends on (edges and
 * `$(task)` references) has finished; its inputs are its edge predecessors' results in edge order; its
 * output becomes the variable named after it. A failed input fails the task (except for any, median,
 * mean, mode, sum, which count faults). Per task: `timeout` (default: the spec's maxTaskDuration),
 * `retries` with exponential backoff between `minBackoff` and `maxBackoff` for retryable errors, and
 * `failEarly`, which stops the whole run at the task's first failure.
 */
export interface TaskOutcome {
  id: string
  type: string
  ok: boolean
  value?: unknown
  /** The failure in words, as the task saw it. */
  error?: string
  /** The failure itself: its kind and retryable flag, its chain of causes (see TaskFailure). */
  failure?: TaskFailure
  attempts: number
  startedAt: number
  durationMs: number
  /** The task never ran: a failEarly task failed, or the run's deadline passed. */
  skipped?: boolean
}

export interface RunResult {
  /** Every task, in the job's topological order. */
  tasks: TaskOutcome[]
  /** Outputs of the terminal tasks, by `index`. */
  outputs: unknown[]
  /** Errors of terminal tasks (empty when the run succeeded). */
  errors: string[]
  /** The same failures as `errors`, in the same order, as errors with their kinds and causes. */
  failures: TaskFailure[]
  ok: boolean
}

/**
 * A task's failure, saying which task: its message is the task's error in words (TaskOutcome.error),
 * its cause the error the task threw (for a task whose input failed, that error's cause is the input
 * task's TaskFailure). Its kind is the cause's; `retryable` is whether the run may be tried again for
 * it: the cause's flag, unless the task declares that its failures never send the run back
 * (TaskDefinition.retriesRun).
 */
export class TaskFailure extends FeedrunnerError {
  override readonly name = 'TaskFailure'
  constructor(
    readonly taskId: string,
    message: string,
    cause: unknown,
    retriesRun: 'by-error' | 'never' = 'by-error',
  ) {
    super(message, {
      kind: errorKindOf(cause),
      retryable: retriesRun === 'by-error' && isRetryable(cause),
      cause,
    })
  }
}

/**
 * Where a failure began: the innermost task failure in its chain (a task whose input failed passes
 * on its input's failure), wrapped with the words `task <id>`, so that `rootCauseFirst` of it says what
 * failed, then in which task.
 */
export function originOf(failure: TaskFailure): FeedrunnerError {
  let origin = failure
  for (let at: unknown = failure.cause; at instanceof Error; at = at.cause)
    if (at instanceof TaskFailure) origin = at
  return withContext(`task ${origin.taskId}`, origin)
}

export interface RunOptions extends Partial<Omit<RunContext, 'runId'>> {
  runId?: string
  /** `jobRun` variables: logData, logTopics, meta, ... */
  jobRun?: Record<string, unknown>
  /** Extra `jobSpec` variables beside the spec's own fields. */
  jobSpec?: Record<string, unknown>
  /** Reads the roots of a block (`jobRun.block*Root`), asked only when the job uses them. */
  blockRoots?: (blockHash: string) => Promise<BlockRoots>
  /** Stops the run from outside (shutdown). */
  signal?: AbortSignal
  /** Called as each task finishes (progress output, run records). */
  onTask?: (outcome: TaskOutcome) => void
}

const DEFAULT_TASK_TIMEOUT_MS = 30_000
const DEFAULT_MIN_BACKOFF_MS = 100
const DEFAULT_MAX_BACKOFF_MS = 60_000

export async function runJob(job: Job, options: RunOptions = {}): Promise<RunResult> {
  const context: RunContext = {
    runId: options.runId ?? `dry-${Date.now()}`,
    chain: options.chain,
    aliases: options.aliases,
    env: options.env ?? process.env,
    limits: options.limits,
    resolveHost: options.resolveHost,
    bridgeReach: options.bridgeReach,
    isolation: options.isolation,
    requester: options.requester,
    forwardingAllowed: job.spec.forwardingAllowed === true,
    forwarder: options.forwarder,
    senders: options.senders,
    defaultGasLimit:
      options.defaultGasLimit ??
      (job.spec.gasLimit === undefined ? undefined : BigInt(job.spec.gasLimit)),
  }
  const vars: Vars = {
    jobSpec: { ...jobSpecVars(job), ...options.jobSpec },
    jobRun: await withBlockRoots(job, { ...options.jobRun }, options.blockRoots),
  }
  // maxTaskDuration "0s" (Chainlink's docs use it) means no spec-wide limit: the default applies.
  const specTimeout =
    job.spec.maxTaskDuration === undefined ? undefined : parseDuration(job.spec.maxTaskDuration)
  const defaultTimeout =
    specTimeout === undefined || specTimeout === 0 ? DEFAULT_TASK_TIMEOUT_MS : specTimeout
  const stop = new AbortController()
  const external = options.signal
  const onExternalAbort = (): void => stop.abort(external?.reason)
  external?.addEventListener('abort', onExternalAbort, { once: true })

  const outcomes = new Map<string, TaskOutcome>()
  const timeoutOf = (task: PipelineTask) => taskTimeoutMs(task, defaultTimeout)
  const isolated =
    context.isolation &&
    new IsolatedRuns(
      context.isolation,
      job.tasks,
      TASK_TYPES,
      (id) => outcomes.get(id),
      timeoutOf,
      context.requester,
    )
  const running = new Map<string, Promise<void>>()
  const start = (task: PipelineTask): Promise<void> =>
    (async () => {
      await Promise.all(task.dependsOn.map((id) => running.get(id)))
      const outcome = stop.signal.aborted
        ? skipped(task, stop.signal.reason)
        : await runTask(task, vars, context, outcomes, timeoutOf(task), stop.signal, isolated)
      outcomes.set(task.id, outcome)
      // defineProperty: a plain assignment to a key such as __proto__ would not create a variable.
      Object.defineProperty(vars, task.id, {
        value: outcome.ok ? outcome.value : outcome.failure,
        enumerable: true,
        writable: true,
        configurable: true,
      })
      options.onTask?.(outcome)
      if (!outcome.ok && !outcome.skipped && task.attributes.failEarly === 'true')
        stop.abort(new Error(`task ${task.id} failed early`))
    })()
  // The order is topological, so every dependency's promise exists before its dependents look it up.
  for (const task of job.tasks) running.set(task.id, start(task))
  await Promise.all(running.values())
  external?.removeEventListener('abort', onExternalAbort)

  const tasks = job.tasks.map((task) => outcomes.get(task.id)!)
  const terminal = job.terminal.map((id) => outcomes.get(id)!)
  const failed = terminal.filter((outcome) => !outcome.ok)
  const failedEarly = tasks.filter(
    (outcome) =>
      !outcome.ok &&
      !outcome.skipped &&
      job.tasks.find((task) => task.id === outcome.id)?.attributes.failEarly === 'true',
  )
  for (const outcome of failedEarly) if (!failed.includes(outcome)) failed.unshift(outcome)
  return {
    tasks,
    outputs: terminal.map((outcome) => (outcome.ok ? outcome.value : undefined)),
    errors: failed.map((outcome) => `${outcome.id}: ${outcome.error}`),
    failures: failed.map(
      (outcome) =>
        outcome.failure ?? new TaskFailure(outcome.id, outcome.error ?? 'failed', undefined),
    ),
    ok: failed.length === 0,
  }
}

function skipped(task: PipelineTask, reason: unknown): TaskOutcome {
  const error = 'not run: the run was stopped'
  // A run stopped from outside (the runner closing) keeps the stop's kind: retryable, it goes back.
  const cause =
    reason instanceof FeedrunnerError && reason.retryable
      ? reason
      : new FeedrunnerError(error, { kind: 'internal' })
  return {
    id: task.id,
    type: task.type,
    ok: false,
    error,
    failure: new TaskFailure(task.id, error, cause),
    attempts: 0,
    startedAt: Date.now(),
    durationMs: 0,
    skipped: true,
  }
}

/** A task's time: its `timeout`, else the spec's maxTaskDuration, else the default. */
function taskTimeoutMs(task: PipelineTask, defaultTimeout: number): number {
  return task.attributes.timeout === undefined
    ? defaultTimeout
    : (parseDuration(task.attributes.timeout) ?? defaultTimeout)
}

async function runTask(
  task: PipelineTask,
  vars: Vars,
  context: RunContext,
  outcomes: ReadonlyMap<string, TaskOutcome>,
  timeoutMs: number,
  stopSignal: AbortSignal,
  isolated: IsolatedRuns | undefined,
): Promise<TaskOutcome> {
  const startedAt = Date.now()
  const definition = TASK_TYPES.get(task.type)
  const inputs: TaskInput[] = task.inputs.map((id) => {
    const outcome = outcomes.get(id)!
    return outcome.ok
      ? { ok: true, value: outcome.value, from: id }
      : { ok: false, error: outcome.failure ?? new TaskError(outcome.error ?? 'failed'), from: id }
  })
  const finish = (
    result: { ok: true; value: unknown } | { ok: false; error: string; cause: unknown },
    attempts: number,
  ): TaskOutcome => ({
    id: task.id,
    type: task.type,
    ...(result.ok
      ? result
      : {
          ok: false,
          error: result.error,
          // A run stopped from outside (the runner closing) goes back whatever the task declares.
          failure: new TaskFailure(
            task.id,
            result.error,
            result.cause,
            stopSignal.aborted ? 'by-error' : definition?.retriesRun,
          ),
        }),
    attempts,
    startedAt,
    durationMs: Date.now() - startedAt,
  })
  const failWith = (error: FeedrunnerError): TaskOutcome =>
    finish({ ok: false, error: error.message, cause: error }, 0)
  if (!definition)
    return failWith(new TaskError(`unknown task type ${task.type}`, { kind: 'config' }))
  const failedInput = inputs.find((input) => !input.ok)
  if (failedInput && !failedInput.ok && !definition.toleratesInputErrors) {
    return failWith(
      new TaskError(
        `input from ${failedInput.from} failed: ${failedInput.error.message}`,
        withCause(failedInput.error),
      ),
    )
  }
  const retries = Number(task.attributes.retries ?? '0')
  const minBackoff = parseDuration(task.attributes.minBackoff ?? '') ?? DEFAULT_MIN_BACKOFF_MS
  const maxBackoff = parseDuration(task.attributes.maxBackoff ?? '') ?? DEFAULT_MAX_BACKOFF_MS
  let attempt = 0
  for (;;) {
    attempt++
    try {
      const value = await attemptTask(
        task,
        isolated && definition.runsIn !== 'main'
          ? isolated.attempt(task, vars, attempt)
          : definition.run,
        inputs,
        vars,
        context,
        timeoutMs,
        stopSignal,
      )
      return finish({ ok: true, value }, attempt)
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      if (!isRetryable(error) || attempt > retries || stopSignal.aborted) {
        const suffix = attempt > 1 ? ` (after ${attempt} attempts)` : ''
        return finish({ ok: false, error: message + suffix, cause: error }, attempt)
      }
      await delay(Math.min(maxBackoff, minBackoff * 2 ** (attempt - 1)), stopSignal)
    }
  }
}

async function attemptTask(
  task: PipelineTask,
  run: (taskRun: ReturnType<typeof createTaskRun>) => Promise<unknown>,
  inputs: readonly TaskInput[],
  vars: Vars,
  context: RunContext,
  timeoutMs: number,
  stopSignal: AbortSignal,
): Promise<unknown> {
  // One controller and one timer per attempt: AbortSignal.timeout and AbortSignal.any each cost more
  // than the small tasks they guard (they track their signals through weak references).
  const controller = new AbortController()
  const abort = (reason: FeedrunnerError) => controller.abort(reason)
  const timer = setTimeout(
    () =>
      abort(
        new TaskError(`timed out after ${timeoutMs} ms`, {
          kind: 'timeout',
          bound: 'task timeout',
        }),
      ),
    timeoutMs,
  )
  timer.unref()
  // A run stopped from outside says why (the runner closing: retryable, the run goes back).
  const onStop = () =>
    abort(
      stopSignal.reason instanceof FeedrunnerError
        ? stopSignal.reason
        : new TaskError('stopped: the run was aborted', { kind: 'internal' }),
    )
  if (stopSignal.aborted) onStop()
  else stopSignal.addEventListener('abort', onStop, { once: true })
  const signal = controller.signal
  const taskRun = createTaskRun({
    id: task.id,
    type: task.type,
    attributes: task.attributes,
    inputs,
    vars,
    context,
    signal,
  })
  const aborted = new Promise<never>((_resolve, reject) => {
    if (signal.aborted) reject(signal.reason as FeedrunnerError)
    else
      signal.addEventListener('abort', () => reject(signal.reason as FeedrunnerError), {
        once: true,
      })
  })
  try {
    return await Promise.race([run(taskRun), aborted])
  } finally {
    clearTimeout(timer)
    stopSignal.removeEventListener('abort', onStop)
    aborted.catch(() => undefined)
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        resolve()
      },
      { once: true },
    )
  })
}
