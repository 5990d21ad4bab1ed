import { FeedrunnerError, isRetryable } from '../config/errors.ts'
import { parseDuration } from './duration.ts'
import type { PipelineTask } from './job-spec/loader.ts'
import { createTaskRun, TaskError, type RunContext, type TaskInput } from './task.ts'
import type { Vars } from './vars.ts'
import { taskTimedOut } from './task-error.ts'

// Trying one task: each attempt under its own timeout and the run's stop, and the attempts a task's
// `retries`, `minBackoff` and `maxBackoff` allow.

const DEFAULT_MIN_BACKOFF_MS = 100
const DEFAULT_MAX_BACKOFF_MS = 60_000

export type TaskResult = { ok: true; value: unknown } | { ok: false; error: string; cause: unknown }

/**
 * Tries a task until it succeeds, fails with an error that is not retryable, runs out of its
 * `retries`, or the run is stopped; between tries it waits an exponential backoff.
 */
export async function withRetries<T>(
  task: PipelineTask,
  stopSignal: AbortSignal,
  finish: (result: TaskResult, attempts: number) => T,
  attemptOnce: (attempt: number) => Promise<unknown>,
): Promise<T> {
  const retries = Number(task.attributes.retries ?? '0')
  const minBackoff = parseDuration(task.attributes.minBackoff ?? '') ?? DEFAULT_MIN_BACKOFF_MS
  const maxBackoff = parseDuration(task.attributes.maxBackoff ?? '') ?? DEFAULT_MAX_BACKOFF_MS
  for (let attempt = 1; ; attempt++) {
    try {
      return finish({ ok: true, value: await attemptOnce(attempt) }, attempt)
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

export async function attemptTask(
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
  const timer = setTimeout(() => abort(taskTimedOut(timeoutMs)), timeoutMs)
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
