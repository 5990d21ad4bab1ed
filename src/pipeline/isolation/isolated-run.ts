import type { PipelineTask } from '../job-spec/schema.ts'
import type { TaskDefinition } from '../task.ts'
import type { Vars } from '../vars.ts'
import type { BatchTask, TaskIsolation } from './task-isolation.ts'
import { encodeValue } from './value-codec.ts'

/** How a task outside the batch ended, as the run knows it. */
export interface KnownOutcome {
  ok: boolean
  value?: unknown
  /** Its failure (a failed task's variable is its failure). */
  failure?: Error
}

type Prefetched =
  { ran: false } | { ran: true; ok: true; value: unknown } | { ran: true; ok: false; error: Error }

/**
 * A run's pure tasks in isolates, in as few crossings as its graph allows: when a pure task starts,
 * the pure tasks that follow it and wait for nothing else (each depends only on tasks of the batch
 * or on tasks that have ended well) go with it, in one message. The isolate answers each task as it
 * ends, and each keeps its own time, as it would alone; a follower's answer waits here until its
 * turn comes in the run. A follower the batch did not run (a task before it failed, or the isolate
 * died) runs on its own, as every task did before batches.
 */
export class IsolatedRuns {
  private readonly prefetched = new Map<string, Promise<Prefetched>>()

  constructor(
    private readonly isolation: TaskIsolation,
    private readonly tasks: readonly PipelineTask[],
    private readonly types: ReadonlyMap<string, TaskDefinition>,
    private readonly known: (id: string) => KnownOutcome | undefined,
    private readonly timeoutOf: (task: PipelineTask) => number,
    /** The run's requester, whose share of the isolates its tasks take. */
    private readonly owner?: string,
  ) {}

  /**
   * The run of one attempt of `task`: its batch's answer for its first attempt when an earlier
   * task's batch ran it, else a batch of its own and its followers.
   */
  attempt(task: PipelineTask, vars: Vars, attempt: number): () => Promise<unknown> {
    return async () => {
      const prefetched = attempt === 1 ? this.prefetched.get(task.id) : undefined
      this.prefetched.delete(task.id)
      const answer = await prefetched
      if (answer?.ran) {
        if (answer.ok) return answer.value
        throw answer.error
      }
      return this.send(task, vars)
    }
  }

  private send(task: PipelineTask, vars: Vars): Promise<unknown> {
    const followers = this.followersOf(task)
    const batch = [task, ...followers]
    const inBatch = new Set(batch.map((item) => item.id))
    const outside: Record<string, unknown> = {}
    for (const item of batch)
      for (const id of [...item.inputs, ...item.dependsOn]) {
        const outcome = inBatch.has(id) || Object.hasOwn(outside, id) ? undefined : this.known(id)
        if (outcome)
          Object.defineProperty(outside, id, {
            value: outcome.ok
              ? { ok: true, value: outcome.value }
              : { ok: false, error: outcome.failure },
            enumerable: true,
          })
      }
    const batchTasks: BatchTask[] = followers.map((follower) => {
      let settle: (answer: Prefetched) => void = () => undefined
      this.prefetched.set(follower.id, new Promise((resolve) => (settle = resolve)))
      return this.batchTask(follower, {
        resolve: (value) => settle({ ran: true, ok: true, value }),
        reject: (error) => settle({ ran: true, ok: false, error }),
        notRun: () => settle({ ran: false }),
      })
    })
    return new Promise((resolve, reject) => {
      batchTasks.unshift(this.batchTask(task, { resolve, reject, notRun: () => undefined }))
      this.isolation.runBatch(
        batchTasks,
        {
          vars: encodeValue({ jobRun: vars.jobRun, jobSpec: vars.jobSpec }),
          outcomes: encodeValue(outside),
        },
        this.owner,
      )
    })
  }

  private batchTask(
    task: PipelineTask,
    answer: Pick<BatchTask, 'resolve' | 'reject' | 'notRun'>,
  ): BatchTask {
    return {
      taskId: task.id,
      type: task.type,
      attributes: task.attributes,
      inputs: task.inputs,
      dependsOn: task.dependsOn,
      timeoutMs: this.timeoutOf(task),
      ...answer,
    }
  }

  /**
   * The pure tasks after `first`, in the run's (topological) order, that wait for the batch and for
   * nothing still to come: each depends on a task of the batch, and otherwise only on tasks that
   * have ended well (one that failed makes its dependent fail without running, here as ever).
   */
  private followersOf(first: PipelineTask): PipelineTask[] {
    const inBatch = new Set([first.id])
    const followers: PipelineTask[] = []
    for (const task of this.tasks.slice(this.tasks.indexOf(first) + 1)) {
      const definition = this.types.get(task.type)
      if (!definition || definition.runsIn === 'main') continue
      if (!task.dependsOn.some((id) => inBatch.has(id))) continue
      if (!task.dependsOn.every((id) => inBatch.has(id) || this.known(id)?.ok === true)) continue
      inBatch.add(task.id)
      followers.push(task)
    }
    return followers
  }
}
