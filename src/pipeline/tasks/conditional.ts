import { parseBoolText } from '../literals.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { describe } from './convert.ts'

/**
 * conditional(data): passes (true) when `data`, a variable or else the first input, is true; fails the
 * task otherwise, so the tasks after it do not run. Text is read as Go's ParseBool reads it.
 */
export const conditional: TaskDefinition = {
  type: 'conditional',
  attributes: ['data'],
  kinds: { data: 'variable' },
  async run(task) {
    const data = task.value('data', { fromInput: true })
    const satisfied =
      typeof data === 'boolean' ? data : typeof data === 'string' ? parseBoolText(data) : undefined
    if (satisfied === undefined)
      throw new TaskError(`data: expected true or false, got ${describe(data)}`)
    if (!satisfied) throw new TaskError('conditional was not satisfied')
    return true
  },
}
