import {
  createTaskRun,
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
