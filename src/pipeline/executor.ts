import { errorKindOf, FeedrunnerError, isRetryable, withContext } from '../config/errors.ts'
import { parseDuration } from './duration.ts'
import type { BlockRoots } from './chain-access.ts'
import type { Job, PipelineTask } from './job-spec/loader.ts'
import { jobSpecVars, withBlockRoots } from './run-vars.ts'
import {
  TaskError,
  withCause,
  type RunContext,
  type TaskDefinition,
  type TaskInput,
} from './task.ts'
import { TASK_TYPES } from './tasks/index.ts'
import { attemptTask, withRetries, type TaskResult } from './task-attempt.ts'
import { IsolatedRuns } from './isolation/isolated-run.ts'
import type { Vars } from './vars.ts'

/** One task of a run: its value or its failure, its attempts and its time. */
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

/**
 * Runs a job's DAG with Chainlink's semantics: a task starts when every task it depends on (edges and
 * `$(task)` references) has finished; its inputs are its edge predecessors' results in edge order; its
 * output becomes the variable named after it. A failed input fails the task (except for any, median,
 * mean, mode, sum, which count faults). Per task: `timeout` (default: the spec's maxTaskDuration),
 * `retries` with exponential backoff between `minBackoff` and `maxBackoff` for retryable errors, and
 * `failEarly`, which stops the whole run at the task's first failure.
 */
export async function runJob(job: Job, options: RunOptions = {}): Promise<RunResult> {
  const context = runContext(job, options)
  const vars: Vars = {
    jobSpec: { ...jobSpecVars(job), ...options.jobSpec },
    jobRun: await withBlockRoots(job, { ...options.jobRun }, options.blockRoots),
  }
  const stop = new AbortController()
  const external = options.signal
  const onExternalAbort = (): void => stop.abort(external?.reason)
  external?.addEventListener('abort', onExternalAbort, { once: true })
  // Stopped before it began (a runner closing as it picked the run up, or while the block roots
  // were read): 'abort' has fired already and no task may start.
  if (external?.aborted) onExternalAbort()
  try {
    return runResult(job, await runTasks(job, vars, context, stop, options.onTask))
  } finally {
    external?.removeEventListener('abort', onExternalAbort)
  }
}

/** What every task of the run sees: the caller's options, with the spec's own settings beside them. */
function runContext(job: Job, options: RunOptions): RunContext {
  return {
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
}

/**
 * Starts every task as soon as the tasks it depends on have finished; each outcome becomes the
 * variable named after its task, and a failEarly task's failure stops the rest of the run.
 */
async function runTasks(
  job: Job,
  vars: Vars,
  context: RunContext,
  stop: AbortController,
  onTask: RunOptions['onTask'],
): Promise<ReadonlyMap<string, TaskOutcome>> {
  const defaultTimeout = specTaskTimeoutMs(job)
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
  const start = async (task: PipelineTask): Promise<void> => {
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
    onTask?.(outcome)
    if (failedEarly(task, outcome)) stop.abort(new Error(`task ${task.id} failed early`))
  }
  // The order is topological, so every dependency's promise exists before its dependents look it up.
  for (const task of job.tasks) running.set(task.id, start(task))
  await Promise.all(running.values())
  return outcomes
}

function failedEarly(task: PipelineTask, outcome: TaskOutcome): boolean {
  return !outcome.ok && !outcome.skipped && task.attributes.failEarly === 'true'
}

/** The run's result: the terminal tasks' outputs, and as its failures theirs and any failEarly task's. */
function runResult(job: Job, outcomes: ReadonlyMap<string, TaskOutcome>): RunResult {
  const tasks = job.tasks.map((task) => outcomes.get(task.id)!)
  const terminal = job.terminal.map((id) => outcomes.get(id)!)
  const failed = terminal.filter((outcome) => !outcome.ok)
  const early = job.tasks.filter((task) => failedEarly(task, outcomes.get(task.id)!))
  for (const task of early) {
    const outcome = outcomes.get(task.id)!
    if (!failed.includes(outcome)) failed.unshift(outcome)
  }
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

/** The spec-wide task time; maxTaskDuration "0s" (Chainlink's docs use it) means the default. */
function specTaskTimeoutMs(job: Job): number {
  const specTimeout =
    job.spec.maxTaskDuration === undefined ? undefined : parseDuration(job.spec.maxTaskDuration)
  return specTimeout === undefined || specTimeout === 0 ? DEFAULT_TASK_TIMEOUT_MS : specTimeout
}

/** A task's time: its `timeout`, else the spec's maxTaskDuration, else the default. */
function taskTimeoutMs(task: PipelineTask, defaultTimeout: number): number {
  return task.attributes.timeout === undefined
    ? defaultTimeout
    : (parseDuration(task.attributes.timeout) ?? defaultTimeout)
}

/**
 * One task: refused before it starts when its type is unknown or an input it cannot take failed,
 * else tried (in its isolate when it has one) as often as its retries allow.
 */
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
  const inputs = taskInputs(task, outcomes)
  const finish = (result: TaskResult, attempts: number): TaskOutcome =>
    // A run stopped from outside (the runner closing) goes back whatever the task declares.
    taskOutcome(
      task,
      result,
      attempts,
      startedAt,
      stopSignal.aborted ? 'by-error' : definition?.retriesRun,
    )
  const refuse = (error: TaskError): TaskOutcome =>
    finish({ ok: false, error: error.message, cause: error }, 0)
  if (!definition)
    return refuse(new TaskError(`unknown task type ${task.type}`, { kind: 'config' }))
  const refusal = failedInputRefusal(definition, inputs)
  if (refusal) return refuse(refusal)
  return withRetries(task, stopSignal, finish, (attempt) =>
    attemptTask(
      task,
      isolated && definition.runsIn !== 'main'
        ? isolated.attempt(task, vars, attempt)
        : definition.run,
      inputs,
      vars,
      context,
      timeoutMs,
      stopSignal,
    ),
  )
}

/** A task's inputs: its edge predecessors' results, a failed one as its failure. */
function taskInputs(task: PipelineTask, outcomes: ReadonlyMap<string, TaskOutcome>): TaskInput[] {
  return task.inputs.map((id) => {
    const outcome = outcomes.get(id)!
    return outcome.ok
      ? { ok: true, value: outcome.value, from: id }
      : { ok: false, error: outcome.failure ?? new TaskError(outcome.error ?? 'failed'), from: id }
  })
}

/** A failed input stops a task unless its type counts faults (any, median, mean, mode, sum). */
function failedInputRefusal(
  definition: TaskDefinition,
  inputs: readonly TaskInput[],
): TaskError | undefined {
  const failedInput = inputs.find((input) => !input.ok)
  if (!failedInput || failedInput.ok || definition.toleratesInputErrors) return undefined
  return new TaskError(
    `input from ${failedInput.from} failed: ${failedInput.error.message}`,
    withCause(failedInput.error),
  )
}

function taskOutcome(
  task: PipelineTask,
  result: TaskResult,
  attempts: number,
  startedAt: number,
  retriesRun: TaskDefinition['retriesRun'],
): TaskOutcome {
  return {
    id: task.id,
    type: task.type,
    ...(result.ok
      ? result
      : {
          ok: false,
          error: result.error,
          failure: new TaskFailure(task.id, result.error, result.cause, retriesRun),
        }),
    attempts,
    startedAt,
    durationMs: Date.now() - startedAt,
  }
}
