import { TaskError, type TaskDefinition } from '../task.ts'

/** fail(msg): fails with its message, every time (Chainlink's task for tests and unreachable branches). */
export const fail: TaskDefinition = {
  type: 'fail',
  attributes: ['msg'],
  async run(task) {
    throw new TaskError(task.raw('msg') ?? '')
  },
}
