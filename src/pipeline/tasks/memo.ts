import { toDecimal } from '../../reduce/index.ts'
import { TaskError, type TaskDefinition } from '../task.ts'

/**
 * memo(value): the value itself, as Chainlink's ObjectParam holds it: `value` is JSON with `$(...)`
 * variables (`value="10"`, `value="[1, 2]"`, `value="\"text\""`), else the first input. A number at
 * the top becomes a decimal; booleans, text, null, lists and maps stay what they are.
 */
export const memo: TaskDefinition = {
  type: 'memo',
  attributes: ['value'],
  jsonAttributes: ['value'],
  async run(task) {
    const written = task.raw('value')
    if (task.inputs.length > 1)
      throw new TaskError(`task inputs: memo takes at most one input, got ${task.inputs.length}`)
    const value =
      written === undefined || written.trim() === ''
        ? task.value('value', { fromInput: true })
        : task.json('value')
    if (typeof value === 'number' || typeof value === 'bigint') return toDecimal(value)
    return value ?? null
  },
}
