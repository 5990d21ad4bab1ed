import type { TaskDefinition } from '../task.ts'
import { textInput } from './text.ts'

/** lowercase(input) */
export const lowercase: TaskDefinition = {
  type: 'lowercase',
  attributes: ['input'],
  async run(task) {
    return textInput(task).toLowerCase()
  },
}
