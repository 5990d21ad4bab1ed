import { Worker } from 'node:worker_threads'
import { FeedrunnerError, reviveError } from '../../config/errors.ts'
import { TaskError } from '../task-error.ts'
import type {
  IsolateContext,
  IsolatedBatchMessage,
  IsolatedTask,
  IsolatedTaskAnswer,
} from './messages.ts'
import { decodeValue } from './value-codec.ts'

/**
 * The isolate a task ran in died under it: its heap passed RUN_ISOLATE_MEMORY_MB, or it ran past its
 * time and was ended. The process that runs the pipeline goes on; the run counts it as a crash, and
 * a request whose runs crash RUN_MAX_CRASHES times is quarantined (src/runner/quarantine.ts).
 */
export class RunCrashedError extends FeedrunnerError {
  override readonly name = 'RunCrashedError'
  constructor(message: string, cause?: unknown) {
    // Not retried by the task's own `retries`: the same input would crash it again. The runner
    // decides: another try of the request, or quarantine.
    super(message, { kind: 'internal', retryable: false, cause })
  }
}

export interface TaskIsolationOptions {
  /** Isolates (worker threads) at once; each runs one task at a time. */
  threads: number
  /**
   * The heap each may use (its maxOldGenerationSizeMb); past it, it dies and its task with it. Keep
   * it well above the largest input a task is given (the body caps): an isolate ended while its
   * inputs alone fill its heap takes the process with it (Node aborts on an out-of-memory in a
   * worker's teardown).
   */
  memoryMb: number
  /** What pure tasks read of a run's context: the catalog's aliases and the pipeline's limits. */
  context: IsolateContext
}

/** One task of a batch as the caller waits for it: its time, and how to answer it. */
export interface BatchTask extends IsolatedTask {
  timeoutMs: number
  resolve: (value: unknown) => void
  reject: (error: Error) => void
  /** The batch ended before this task ran (an earlier one failed, or its isolate died). */
  notRun: () => void
}

type Pending = {
  message: IsolatedBatchMessage
  tasks: readonly BatchTask[]
  /** The task the isolate is running now: the next one to answer. */
  at: number
}

interface Slot {
  worker: Worker
  running?: Pending
  timer?: NodeJS.Timeout
}

/**
 * The young generation of each isolate, where what a task builds is first allocated. V8's default
 * lets it grow to tens of MB in each isolate under load, garbage that the process's RSS carries for
 * as long as the isolate lives; a pure task's allocations live only as long as the task, and a small
 * young generation collects them sooner at little cost (a scavenge of a few live objects).
 */
const ISOLATE_YOUNG_GENERATION_MB = 8

/** How long past its own timeout a task may hold its isolate before the isolate is ended. */
const OVERRUN_GRACE_MS = 1_000

/**
 * Pure pipeline tasks run in isolates: worker threads with their own bounded heap, one task at a
 * time each, so that whatever a decoder or library builds or loops on, it takes down no more than
 * its isolate (and its one task). A task that runs past its timeout has its isolate ended (a
 * synchronous loop would never see an abort); a dead isolate is replaced before the next task. A
 * run's pure tasks that follow one another cross in one message (a batch, `isolated-run.ts`): a
 * crossing costs both threads more than most pure tasks do.
 */
export class TaskIsolation {
  private readonly slots: Slot[] = []
  private readonly queue: Pending[] = []
  private nextId = 0
  private closed = false

  constructor(private readonly options: TaskIsolationOptions) {}

  /** Messages sent to the isolates so far: one a batch. */
  crossings = 0

  /**
   * Runs tasks in an isolate, one after another, in one crossing. Each task is answered as it ends:
   * its value, or its error (of its kind), or RunCrashedError when its isolate died under it; each
   * has its own time (its isolate is ended when it runs past it). The batch stops at the first task
   * that fails: those after it are told they did not run.
   */
  runBatch(
    tasks: readonly BatchTask[],
    shared: Pick<IsolatedBatchMessage, 'vars' | 'outcomes'>,
  ): void {
    if (tasks.length === 0) return
    if (this.closed) {
      tasks[0]?.reject(new TaskError('stopped: the runner is closing'))
      for (const task of tasks.slice(1)) task.notRun()
      return
    }
    const message: IsolatedBatchMessage = {
      id: ++this.nextId,
      tasks: tasks.map(({ taskId, type, attributes, inputs, dependsOn }) => ({
        taskId,
        type,
        attributes,
        inputs,
        dependsOn,
      })),
      ...shared,
    }
    this.queue.push({ message, tasks, at: 0 })
    this.dispatch()
  }

  /** Starts every isolate now (loading the task types takes a while), not at the first task. */
  warm(): void {
    while (!this.closed && this.slots.length < Math.max(1, this.options.threads)) {
      const slot: Slot = { worker: this.spawn() }
      this.slots.push(slot)
      this.watch(slot)
    }
  }

  /** Ends every isolate; tasks still queued or running fail. */
  async close(): Promise<void> {
    this.closed = true
    for (const pending of this.queue.splice(0)) {
      pending.tasks[0]?.reject(new TaskError('stopped: the runner is closing'))
      for (const task of pending.tasks.slice(1)) task.notRun()
    }
    await Promise.all(this.slots.splice(0).map((slot) => this.end(slot)))
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const slot = this.idleSlot()
      if (!slot) return
      const pending = this.queue.shift() as Pending
      slot.running = pending
      this.timeTask(slot, pending)
      // Held while it works (the process waits for its answer), let go while idle.
      slot.worker.ref()
      this.crossings++
      slot.worker.postMessage(pending.message)
    }
  }

  /** The overrun timer of the batch's task now running: its own time and the grace. */
  private timeTask(slot: Slot, pending: Pending): void {
    clearTimeout(slot.timer)
    const task = pending.tasks[pending.at] as BatchTask
    slot.timer = setTimeout(() => this.overrun(slot), task.timeoutMs + OVERRUN_GRACE_MS)
    slot.timer.unref()
  }

  private idleSlot(): Slot | undefined {
    const idle = this.slots.find((slot) => !slot.running)
    if (idle) return idle
    if (this.slots.length >= Math.max(1, this.options.threads)) return undefined
    const slot: Slot = { worker: this.spawn() }
    this.slots.push(slot)
    this.watch(slot)
    return slot
  }

  private spawn(): Worker {
    // From the sources (tests, `npm start` before a build) the thread loads TypeScript through tsx,
    // found from here, not from the process's working directory (which may be anywhere).
    const fromSources = import.meta.url.endsWith('.ts')
    const worker = new Worker(
      new URL(`./isolate-thread.${fromSources ? 'ts' : 'js'}`, import.meta.url),
      {
        workerData: this.options.context,
        resourceLimits: {
          maxOldGenerationSizeMb: this.options.memoryMb,
          maxYoungGenerationSizeMb: ISOLATE_YOUNG_GENERATION_MB,
        },
        execArgv: fromSources ? ['--import', import.meta.resolve('tsx')] : [],
        stdout: false,
        stderr: false,
      },
    )
    worker.unref()
    return worker
  }

  private watch(slot: Slot): void {
    slot.worker.on('message', (answer: IsolatedTaskAnswer) => {
      const pending = slot.running
      if (!pending || pending.message.id !== answer.id || pending.at !== answer.index) return
      const task = pending.tasks[answer.index] as BatchTask
      pending.at++
      if (answer.last) {
        this.free(slot)
        for (const after of pending.tasks.slice(pending.at)) after.notRun()
      } else this.timeTask(slot, pending)
      if (answer.ok) task.resolve(decodeValue(answer.value))
      else task.reject(reviveError(answer.error))
      if (answer.last) this.dispatch()
    })
    const died = (cause: unknown) => {
      const pending = slot.running
      this.replace(slot)
      const outOfMemory = (cause as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY'
      const why = outOfMemory
        ? `what it built passed its heap of RUN_ISOLATE_MEMORY_MB=${this.options.memoryMb}`
        : `it stopped (${cause instanceof Error ? cause.message : String(cause)})`
      if (pending) crashed(pending, new RunCrashedError(`its isolate died: ${why}`, cause))
    }
    slot.worker.on('error', died)
    slot.worker.on('exit', (code) => {
      if (!this.closed && this.slots.includes(slot)) died(new Error(`the isolate exited (${code})`))
    })
  }

  /** A task past its time: its isolate is ended (a synchronous loop never sees an abort). */
  private overrun(slot: Slot): void {
    const pending = slot.running
    if (!pending) return
    this.replace(slot)
    const task = pending.tasks[pending.at] as BatchTask
    crashed(
      pending,
      new RunCrashedError(
        `it ran ${task.timeoutMs + OVERRUN_GRACE_MS} ms and did not stop; its isolate was ended`,
      ),
    )
  }

  private free(slot: Slot): void {
    clearTimeout(slot.timer)
    slot.running = undefined
    slot.worker.unref()
  }

  /** Drops a dead or overrunning isolate; the next task gets a fresh one. */
  private replace(slot: Slot): void {
    this.free(slot)
    const at = this.slots.indexOf(slot)
    if (at >= 0) this.slots.splice(at, 1)
    void this.end(slot)
    queueMicrotask(() => this.dispatch())
  }

  private async end(slot: Slot): Promise<void> {
    clearTimeout(slot.timer)
    slot.worker.removeAllListeners()
    slot.worker.on('error', () => undefined)
    await slot.worker.terminate().catch(() => undefined)
  }
}

/** The batch's running task crashed with its isolate; the tasks after it did not run. */
function crashed(pending: Pending, error: RunCrashedError): void {
  pending.tasks[pending.at]?.reject(error)
  for (const after of pending.tasks.slice(pending.at + 1)) after.notRun()
}
