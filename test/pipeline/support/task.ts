import { makeError } from 'ethers'
import { expect } from 'vitest'
import type { FeedrunnerError } from '../../../src/config/errors.ts'
import {
  createTaskRun,
  TaskError,
  TASK_TYPES,
  type RunContext,
  type TaskInput,
} from '../../../src/pipeline/index.ts'
import type { Vars } from '../../../src/pipeline/index.ts'

/** Runs one task type in isolation, the way the executor would, and returns its value (or throws its error). */
export async function runTask(
  type: string,
  attributes: Record<string, string>,
  options: {
    inputs?: unknown[]
    failedInputs?: string[]
    vars?: Vars
    context?: Partial<RunContext>
  } = {},
  signal: AbortSignal = AbortSignal.timeout(10_000),
): Promise<unknown> {
  const definition = TASK_TYPES.get(type)
  if (!definition) throw new Error(`no task type ${type}`)
  const inputs: TaskInput[] = [
    ...(options.inputs ?? []).map((value, index): TaskInput => ({
      ok: true,
      value,
      from: `in${index}`,
    })),
    ...(options.failedInputs ?? []).map((message, index): TaskInput => ({
      ok: false,
      error: new Error(message),
      from: `bad${index}`,
    })),
  ]
  const task = createTaskRun({
    id: 'task',
    type,
    attributes: { type, ...attributes },
    inputs,
    vars: options.vars ?? {},
    context: { runId: 'test', env: {}, ...options.context },
    signal,
  })
  return definition.run(task)
}

/** The error `run` fails with, checked to be a task's own (a TaskError). */
export async function taskFailure(run: Promise<unknown>): Promise<TaskError> {
  const error = await run.then(
    () => expect.fail('expected the task to fail'),
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(TaskError)
  return error as TaskError
}

/** The error `run` fails with, whatever its class (a task's, or a bound's it passes on). */
export async function failureOf(run: Promise<unknown>): Promise<FeedrunnerError> {
  try {
    await run
  } catch (error) {
    return error as FeedrunnerError
  }
  throw new Error('expected the task to fail')
}

/** A node's revert of an eth_call to `to`, as ethers reports it (CALL_EXCEPTION), with its reason. */
export function callException(to: string, reason: string): Error {
  return makeError(`execution reverted: ${reason}`, 'CALL_EXCEPTION', {
    action: 'call',
    data: '0x',
    reason,
    transaction: { to, data: '0x' },
    invocation: null,
    revert: null,
  })
}
