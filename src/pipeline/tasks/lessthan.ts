import type { TaskDefinition } from '../task.ts'
import { decimalOf } from './convert.ts'

/** lessthan(left, right): whether left < right, compared as exact decimals; left defaults to the first input. */
export const lessthan: TaskDefinition = {
  type: 'lessthan',
  attributes: ['left', 'right'],
  required: ['right'],
  kinds: { left: 'decimal', right: 'decimal' },
  async run(task) {
    const left = decimalOf(task.value('left', { fromInput: true }), 'left')
    return left.lessThan(decimalOf(task.value('right'), 'right'))
  },
}
