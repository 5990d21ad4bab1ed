// The body of an isolate: a worker thread that runs pure pipeline tasks (decoders, reducers,
// encoders), a batch at a time, under the thread's resourceLimits. What a task builds stays in this
// thread's heap; if it grows past the limit, this thread dies and the process that runs the pipeline
// does not.
import { parentPort, workerData } from 'node:worker_threads'
import { useWasmKeccak } from '../../chain/keccak.ts'
import { serialiseError } from '../../config/errors.ts'
import { createTaskRun, type RunContext, type TaskInput } from '../task.ts'
import { TaskError } from '../task-error.ts'
import { PURE_TASK_TYPES } from '../tasks/pure.ts'
import type { Vars } from '../vars.ts'
import { ISOLATE_READY } from './messages.ts'
import type { IsolateContext, IsolatedBatchMessage, IsolatedTask } from './messages.ts'
import { decodeValue, encodeValue } from './value-codec.ts'

const { aliases, limits } = workerData as IsolateContext
const port = parentPort
if (!port) throw new Error('isolate-thread.ts runs as a worker thread')
// The encoders hash (selectors, checksummed addresses) as the main thread does: with the
// WebAssembly Keccak, not ethers' JavaScript one.
await useWasmKeccak()

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

port.on('message', (message: IsolatedBatchMessage) => void runBatch(message))
port.postMessage(ISOLATE_READY)

/** Runs the batch's tasks in order, answering each as it ends; stops at the first that fails. */
async function runBatch(message: IsolatedBatchMessage): Promise<void> {
  const outcomes = new Map(Object.entries(decodeValue(message.outcomes) as Record<string, Outcome>))
  const { jobRun, jobSpec } = decodeValue(message.vars) as Vars
  for (const [index, task] of message.tasks.entries()) {
    const outcome = await runTask(task, outcomes, { jobRun, jobSpec })
    outcomes.set(task.taskId, outcome)
    const last = !outcome.ok || index === message.tasks.length - 1
    port!.postMessage(
      outcome.ok
        ? { id: message.id, index, last, ok: true, value: encodeValue(outcome.value) }
        : { id: message.id, index, last, ok: false, error: serialiseError(outcome.error) },
    )
    if (last) return
  }
}

async function runTask(
  task: IsolatedTask,
  outcomes: ReadonlyMap<string, Outcome>,
  runVars: Vars,
): Promise<Outcome> {
  try {
    const definition = PURE_TASK_TYPES.get(task.type)
    if (!definition) throw new Error(`unknown task type ${task.type}`)
    const inputs: TaskInput[] = task.inputs.map((id) => {
      const outcome = outcomes.get(id)
      if (!outcome) throw new TaskError(`input from ${id} is missing in the isolate`)
      return outcome.ok
        ? { ok: true, value: outcome.value, from: id }
        : { ok: false, error: outcome.error as Error, from: id }
    })
    // The variables it may read: the run's, and the outputs of the tasks it depends on.
    const vars: Vars = { jobRun: runVars.jobRun, jobSpec: runVars.jobSpec }
    for (const id of task.dependsOn) {
      const outcome = outcomes.get(id)
      if (outcome)
        Object.defineProperty(vars, id, {
          value: outcome.ok ? outcome.value : outcome.error,
          enumerable: true,
        })
    }
    const context: RunContext = { runId: 'isolated', env: {}, aliases, limits }
    const value = await definition.run(
      createTaskRun({
        id: task.taskId,
        type: task.type,
        attributes: task.attributes,
        inputs,
        vars,
        context,
        // The main thread bounds the task's time: it ends this thread when the task runs over.
        signal: new AbortController().signal,
      }),
    )
    return { ok: true, value }
  } catch (error) {
    return { ok: false, error }
  }
}
