// The body of an isolate: a worker thread that runs pure pipeline tasks (decoders, reducers,
// encoders), a message of batches at a time, under the thread's resourceLimits. What a task builds
// stays in this thread's heap; if it grows past the limit, this thread dies and the process that
// runs the pipeline does not.
import { parentPort, workerData } from 'node:worker_threads'
import { useWasmKeccak } from '../../chain/keccak.ts'
import { serialiseError } from '../../config/errors.ts'
import { createTaskRun, type RunContext, type TaskInput } from '../task.ts'
import { TaskError } from '../task-error.ts'
import { PURE_TASK_TYPES } from '../tasks/pure.ts'
import type { Vars } from '../vars.ts'
import { ISOLATE_READY } from './messages.ts'
import type {
  IsolateData,
  IsolatedAnswer,
  IsolatedBatch,
  IsolatedMessage,
  IsolatedOutcome,
  IsolatedTask,
} from './messages.ts'
import { IsolateProgress, monotonicMs } from './progress.ts'
import { decodeValue, encodeValue } from './value-codec.ts'

const { aliases, limits, progress: progressBuffer } = workerData as IsolateData
const progress = new IsolateProgress(progressBuffer)
const port = parentPort
if (!port) throw new Error('isolate-thread.ts runs as a worker thread')
// The encoders hash (selectors, checksummed addresses) as the main thread does: with the
// WebAssembly Keccak, not ethers' JavaScript one.
await useWasmKeccak()

// The main thread bounds a task's time (it ends this thread when the task runs over), so the tasks
// here share one signal that never aborts rather than each making its own.
const NEVER_ABORTED = new AbortController().signal
const context: RunContext = { runId: 'isolated', env: {}, aliases, limits }

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

port.on('message', (message: IsolatedMessage) => void runMessage(message))
port.postMessage(ISOLATE_READY)

/** Runs the message's batches in order and answers once, with every batch's outcomes. */
async function runMessage(message: IsolatedMessage): Promise<void> {
  const batches: IsolatedOutcome[][] = []
  let place = 0
  for (const batch of message.batches) {
    batches.push(await runBatch(batch, place))
    place += batch.tasks.length
  }
  const answer: IsolatedAnswer = { id: message.id, batches }
  port!.postMessage(answer)
}

/**
 * Runs a batch's tasks in order, saying each one's start in the progress (`first` is the place of
 * the batch's first task in its message); stops at the first that fails.
 */
async function runBatch(batch: IsolatedBatch, first: number): Promise<IsolatedOutcome[]> {
  const outcomes = new Map(Object.entries(decodeValue(batch.outcomes) as Record<string, Outcome>))
  const { jobRun, jobSpec } = decodeValue(batch.vars) as Vars
  const answers: IsolatedOutcome[] = []
  for (const [index, task] of batch.tasks.entries()) {
    const started = progress.starting(first + index)
    const outcome = await runTask(task, outcomes, { jobRun, jobSpec })
    const ms = monotonicMs() - started
    outcomes.set(task.taskId, outcome)
    if (!outcome.ok) {
      answers.push({ ms, ok: false, error: serialiseError(outcome.error) })
      break
    }
    answers.push({ ms, ok: true, value: encodeValue(outcome.value) })
  }
  return answers
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
    const value = await definition.run(
      createTaskRun({
        id: task.taskId,
        type: task.type,
        attributes: task.attributes,
        inputs,
        vars,
        context,
        signal: NEVER_ABORTED,
      }),
    )
    return { ok: true, value }
  } catch (error) {
    return { ok: false, error }
  }
}
