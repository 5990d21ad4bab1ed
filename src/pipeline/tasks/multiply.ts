import type { TaskDefinition } from '../task.ts'
import { decimalOf } from './convert.ts'

/** multiply(input, times): exact decimal product (no float on the way); output is a Decimal. */
export const multiply: TaskDefinition = {
  type: 'multiply',
  attributes: ['input', 'times'],
  required: ['times'],
  kinds: { input: 'decimal', times: 'decimal' },
  async run(task) {
    const input = decimalOf(task.value('input', { fromInput: true }), 'input')
    return input.times(decimalOf(task.value('times'), 'times'))
  },
}
