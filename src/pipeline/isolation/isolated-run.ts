import type { PipelineTask } from '../job-spec/schema.ts'
import type { TaskInput } from '../task.ts'
import type { Vars } from '../vars.ts'
import type { TaskIsolation } from './task-isolation.ts'
import { encodeValue } from './value-codec.ts'

/**
 * A task's run in an isolate: its inputs and the variables it may read (the run's jobRun and jobSpec,
 * and the outputs of the tasks it depends on; not every output of the run) go to the isolate, its
 * value comes back.
 */
export function isolatedRun(
  isolation: TaskIsolation,
  task: PipelineTask,
  inputs: readonly TaskInput[],
  vars: Vars,
  timeoutMs: number,
  /** The run's requester, whose share of the isolates the task takes. */
  owner?: string,
): () => Promise<unknown> {
  return () => {
    const readable: Vars = { jobRun: vars.jobRun, jobSpec: vars.jobSpec }
    for (const id of task.dependsOn)
      if (Object.hasOwn(vars, id))
        Object.defineProperty(readable, id, { value: vars[id], enumerable: true })
    return isolation.run(
      {
        taskId: task.id,
        type: task.type,
        attributes: task.attributes,
        inputs: encodeValue(inputs),
        vars: encodeValue(readable),
      },
      timeoutMs,
      owner,
    )
  }
}
