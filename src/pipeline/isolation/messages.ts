import type { SerialisedError } from '../../config/errors.ts'
import type { Aliases } from '../../reduce/index.ts'
import type { PipelineLimits } from '../limits.ts'
import type { Encoded } from './value-codec.ts'

/** What an isolate needs of the run's context: pure tasks read only these. */
export interface IsolateContext {
  aliases?: Aliases
  limits?: PipelineLimits
}

/** One task of a batch: its definition is looked up in the isolate by type. */
export interface IsolatedTask {
  taskId: string
  type: string
  attributes: Readonly<Record<string, string>>
  /** Its edge predecessors, in edge order: its inputs. */
  inputs: readonly string[]
  /** Every task it depends on (edges and `$(task)` references): the variables it may read. */
  dependsOn: readonly string[]
}

/**
 * Pure tasks to run in an isolate, one after another, in one crossing: a task's inputs and variables
 * are the outputs of the tasks before it in the batch, or those given. The isolate answers each task
 * as it ends (IsolatedTaskAnswer) and stops at the first that fails.
 */
export interface IsolatedBatchMessage {
  id: number
  tasks: readonly IsolatedTask[]
  /** The run's jobRun and jobSpec. */
  vars: Encoded
  /**
   * What the tasks outside the batch that these read ended with, by id: `{ ok, value | error }`,
   * encoded. Not every output of the run: a task reads only what it depends on.
   */
  outcomes: Encoded
}

/**
 * What an isolate says once, when it has loaded the task types and can run a batch at once: a batch
 * is sent only to an isolate that said it, so a task's time never counts the isolate's start.
 */
export const ISOLATE_READY = 'ready'

export type IsolatedTaskAnswer = { id: number; index: number; last: boolean } & (
  { ok: true; value: Encoded } | { ok: false; error: SerialisedError }
)
