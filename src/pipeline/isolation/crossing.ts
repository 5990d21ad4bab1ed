import { reviveError } from '../../config/stored-errors.ts'
import { TaskError, taskTimedOut } from '../task-error.ts'
import type { IsolatedAnswer, IsolatedBatch, IsolatedMessage, IsolatedTask } from './messages.ts'
import { monotonicMs } from './progress.ts'
import { decodeValue } from './value-codec.ts'

/** One task of a batch as the caller waits for it: its time, and how to answer it. */
export interface BatchTask extends IsolatedTask {
  timeoutMs: number
  resolve: (value: unknown) => void
  reject: (error: Error) => void
  /** The batch ended before this task ran (an earlier one failed, or its isolate died). */
  notRun: () => void
}

/** A batch waiting for an isolate: one run's tasks, and whose run it is. */
export interface QueuedBatch {
  tasks: readonly BatchTask[]
  shared: Pick<IsolatedBatch, 'vars' | 'outcomes'>
  /** Whose tasks they are (the run's requester): isolates are shared fairly between owners. */
  owner: string
}

/**
 * Batches sent to an isolate in one message, until its answer: which task is at which place of the
 * message (the isolate's progress names a place), and how each of its callers is answered.
 */
export class Crossing {
  readonly message: IsolatedMessage
  /** When it was made, just before it is sent (the monotonic clock): the first task's time. */
  readonly sentAtMs = monotonicMs()
  /** Each task of the message by its place: its batch and the task. */
  private readonly places: { batch: QueuedBatch; task: BatchTask }[]

  constructor(
    id: number,
    readonly batches: readonly QueuedBatch[],
  ) {
    this.message = {
      id,
      batches: batches.map(({ tasks, shared }) => ({
        tasks: tasks.map(({ taskId, type, attributes, inputs, dependsOn }) => ({
          taskId,
          type,
          attributes,
          inputs,
          dependsOn,
        })),
        ...shared,
      })),
    }
    this.places = batches.flatMap((batch) => batch.tasks.map((task) => ({ batch, task })))
  }

  get owner(): string {
    return (this.batches[0] as QueuedBatch).owner
  }

  /** The task at `place` of the message (the first while none has started). */
  taskAt(place: number): BatchTask {
    return this.at(place).task
  }

  private at(place: number): { batch: QueuedBatch; task: BatchTask } {
    return (this.places[Math.max(0, place)] ?? this.places[0])!
  }

  /** The shortest time of the tasks at `place` and after (Infinity when there are none). */
  shortestTimeoutFrom(place: number): number {
    return Math.min(...this.places.slice(place).map(({ task }) => task.timeoutMs))
  }

  /** Answers every task from the isolate's answer; those it did not run are told so. */
  answer(answer: IsolatedAnswer): void {
    for (const [at, batch] of this.batches.entries()) {
      const outcomes = answer.batches[at] ?? []
      for (const [index, task] of batch.tasks.entries()) {
        const outcome = outcomes[index]
        // Every batch's first task runs; a first task with no outcome would wait for ever.
        if (!outcome && index === 0) task.reject(new TaskError('its isolate gave it no answer'))
        else if (!outcome) task.notRun()
        // Its answer came with the batch's, not when it ended: a task that ran past its time fails
        // as it would have had the run's timer seen it, whatever it ended with.
        else if (outcome.ms > task.timeoutMs) task.reject(taskTimedOut(task.timeoutMs))
        else if (outcome.ok) task.resolve(decodeValue(outcome.value))
        else task.reject(reviveError(outcome.error))
      }
    }
  }

  /**
   * The isolate died while the task at `place` ran: that task fails with `error` and the rest of
   * its batch does not run. What is returned is to be sent again, in its order: the other batches,
   * and the tasks of its own batch that ran before it. What they built died with the isolate, and
   * none of them is to blame (pure tasks run again give the same).
   */
  crashed(place: number, error: Error): QueuedBatch[] {
    const { batch, task } = this.at(place)
    const at = batch.tasks.indexOf(task)
    task.reject(error)
    for (const after of batch.tasks.slice(at + 1)) after.notRun()
    return this.batches.flatMap((each) => {
      if (each !== batch) return [each]
      return at > 0 ? [{ ...batch, tasks: batch.tasks.slice(0, at) }] : []
    })
  }
}

/** The batch's first task fails with `error`; the tasks after it did not run. */
export function failBatch(batch: QueuedBatch, error: Error): void {
  batch.tasks[0]?.reject(error)
  for (const task of batch.tasks.slice(1)) task.notRun()
}
