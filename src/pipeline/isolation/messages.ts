import type { SerialisedError } from '../../config/errors.ts'
import type { Aliases } from '../../reduce/index.ts'
import type { PipelineLimits } from '../limits.ts'
import type { Encoded } from './value-codec.ts'

/** What an isolate needs of the run's context: pure tasks read only these. */
export interface IsolateContext {
  aliases?: Aliases
  limits?: PipelineLimits
}

/** What an isolate is started with: the context, and the memory it says its progress in. */
export interface IsolateData extends IsolateContext {
  /** An IsolateProgress's buffer (`progress.ts`). */
  progress: SharedArrayBuffer
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
 * One run's pure tasks to run one after another: a task's inputs and variables are the outputs of
 * the tasks before it in the batch, or those given. The batch stops at the first task that fails.
 */
export interface IsolatedBatch {
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
 * Batches to run in an isolate, one after another, in one crossing: one run's pure tasks that follow
 * one another, or several runs' of one requester that were waiting together. The isolate answers
 * once, when the last has ended (IsolatedAnswer), and says which task it is running in its
 * IsolateProgress meanwhile.
 */
export interface IsolatedMessage {
  id: number
  batches: readonly IsolatedBatch[]
}

/** How one task of a batch ended, and the ms it ran (the isolate's monotonic clock). */
export type IsolatedOutcome = { ms: number } & (
  { ok: true; value: Encoded } | { ok: false; error: SerialisedError }
)

/** The message's answer: each batch's outcomes in order, up to and with its first failure. */
export interface IsolatedAnswer {
  id: number
  batches: readonly (readonly IsolatedOutcome[])[]
}

/**
 * What an isolate says once, when it has loaded the task types and can run a batch at once: a batch
 * is sent only to an isolate that said it, so a task's time never counts the isolate's start.
 */
export const ISOLATE_READY = 'ready'
