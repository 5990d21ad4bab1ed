// The body of an isolate: a worker thread that runs one pure pipeline task at a time (decoders,
// reducers, encoders), under the thread's resourceLimits. What a task builds stays in this thread's
// heap; if it grows past the limit, this thread dies and the process that runs the pipeline does not.
import { parentPort, workerData } from 'node:worker_threads'
import { serialiseError } from '../../config/errors.ts'
import { createTaskRun, type RunContext, type TaskInput } from '../task.ts'
import { TASK_TYPES } from '../tasks/index.ts'
import type { Vars } from '../vars.ts'
import type { IsolateContext, IsolatedTaskAnswer, IsolatedTaskMessage } from './messages.ts'
import { decodeValue, encodeValue } from './value-codec.ts'

const { aliases, limits } = workerData as IsolateContext
const port = parentPort
if (!port) throw new Error('isolate-thread.ts runs as a worker thread')

port.on('message', (message: IsolatedTaskMessage) => {
  void runTask(message).then((answer) => port.postMessage(answer))
})

async function runTask(message: IsolatedTaskMessage): Promise<IsolatedTaskAnswer> {
  try {
    const definition = TASK_TYPES.get(message.type)
    if (!definition) throw new Error(`unknown task type ${message.type}`)
    const context: RunContext = { runId: 'isolated', env: {}, aliases, limits }
    const value = await definition.run(
      createTaskRun({
        id: message.taskId,
        type: message.type,
        attributes: message.attributes,
        inputs: decodeValue(message.inputs) as TaskInput[],
        vars: decodeValue(message.vars) as Vars,
        context,
        // The main thread bounds the task's time: it ends this thread when the task runs over.
        signal: new AbortController().signal,
      }),
    )
    return { id: message.id, ok: true, value: encodeValue(value) }
  } catch (error) {
    return { id: message.id, ok: false, error: serialiseError(error) }
  }
}
