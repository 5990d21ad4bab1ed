import { randomInt } from 'node:crypto'
import { TaskError, type TaskDefinition } from '../task.ts'

/** any: one of the inputs that succeeded, chosen at random (Chainlink's `any`); fails only when all failed. */
export const any: TaskDefinition = {
  type: 'any',
  attributes: [],
  toleratesInputErrors: true,
  async run(task) {
    const values = task.inputValues(Number.MAX_SAFE_INTEGER)
    if (values.length === 0) throw new TaskError(`all ${task.inputs.length} inputs failed`)
    return values[randomInt(values.length)]
  },
}
