import type { TaskIsolation } from '../../../src/pipeline/index.ts'
import { encodeValue } from '../../../src/pipeline/isolation/value-codec.ts'

/** A task to run in an isolate, with the run variables it reads. */
export interface IsolatedTaskCase {
  taskId: string
  type: string
  attributes: Record<string, string>
  vars: object
}

/** One task alone in a batch, for `owner`: its value, or its error. */
export function runIsolated(
  target: TaskIsolation,
  task: IsolatedTaskCase,
  timeoutMs: number,
  owner?: string,
): Promise<unknown> {
  return new Promise((resolve, reject) =>
    target.runBatch(
      [
        {
          taskId: task.taskId,
          type: task.type,
          attributes: task.attributes,
          inputs: [],
          dependsOn: [],
          timeoutMs,
          resolve,
          reject,
          notRun: () => reject(new Error('not run')),
        },
      ],
      { vars: encodeValue(task.vars), outcomes: encodeValue({}) },
      owner,
    ),
  )
}
