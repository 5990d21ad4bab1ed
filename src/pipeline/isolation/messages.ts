import type { SerialisedError } from '../../config/errors.ts'
import type { Aliases } from '../../reduce/index.ts'
import type { PipelineLimits } from '../limits.ts'
import type { Encoded } from './value-codec.ts'

/** What an isolate needs of the run's context: pure tasks read only these. */
export interface IsolateContext {
  aliases?: Aliases
  limits?: PipelineLimits
}

/** One task to run in an isolate: its definition is looked up there by type. */
export interface IsolatedTaskMessage {
  id: number
  taskId: string
  type: string
  attributes: Readonly<Record<string, string>>
  /** The task's inputs: `{ ok, value | error, from }`, encoded. */
  inputs: Encoded
  /** The variables the task may read (jobRun, jobSpec and the outputs of the tasks before it), encoded. */
  vars: Encoded
}

export type IsolatedTaskAnswer =
  { id: number; ok: true; value: Encoded } | { id: number; ok: false; error: SerialisedError }
