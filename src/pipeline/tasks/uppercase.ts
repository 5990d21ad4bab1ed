import type { TaskDefinition } from '../task.ts'
import { textInput } from './text.ts'

/** uppercase(input) */
export const uppercase: TaskDefinition = {
  type: 'uppercase',
  attributes: ['input'],
  async run(task) {
    return textInput(task).toUpperCase()
  },
}
