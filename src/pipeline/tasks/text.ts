import { TaskError, type TaskRun } from '../task.ts'
import { describe } from './convert.ts'

export function textInput(task: TaskRun): string {
  const input = task.value('input', { fromInput: true })
  if (typeof input !== 'string')
    throw new TaskError(`input must be a string, got ${describe(input)}`)
  return input
}
