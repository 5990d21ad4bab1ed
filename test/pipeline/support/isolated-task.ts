import type { TaskIsolation } from '../../../src/pipeline/index.ts'
import { encodeValue } from '../../../src/pipeline/isolation/value-codec.ts'
import { abiAliasBomb, jsonWideBomb } from '../../support/decode-bombs.ts'

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

/** jsonparse of `{"a":<value>}` at path `a`: a task of a few microseconds that answers `value`. */
export function quickTask(value: number): IsolatedTaskCase {
  return {
    taskId: 'parse',
    type: 'jsonparse',
    attributes: { type: 'jsonparse', data: `{"a":${value}}`, path: 'a' },
    vars: {},
  }
}

/** 9 MB of `[[],[],...]` for jsonparse: builds past a 64 MB heap. */
export function memoryBomb(): IsolatedTaskCase {
  return {
    taskId: 'parse',
    type: 'jsonparse',
    attributes: { type: 'jsonparse', data: '$(jobRun.body)', path: '0' },
    vars: { jobRun: { body: jsonWideBomb(9 * 1024 * 1024) } },
  }
}

/** An ABI alias bomb (`abiAliasBomb(levels, paddingBytes)`) to decode: a synchronous decode. */
export function abiBombTask(levels: number, paddingBytes = 0): IsolatedTaskCase {
  const bomb = abiAliasBomb(levels, paddingBytes)
  return {
    taskId: 'decode',
    type: 'ethabidecodelog',
    attributes: {
      type: 'ethabidecodelog',
      abi: bomb.abi,
      data: '$(jobRun.logData)',
      topics: '$(jobRun.logTopics)',
    },
    vars: { jobRun: { logData: bomb.data, logTopics: bomb.topics } },
  }
}
