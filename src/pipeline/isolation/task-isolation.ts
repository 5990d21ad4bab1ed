import { Worker } from 'node:worker_threads'
import { FeedrunnerError } from '../../config/errors.ts'
import { reviveError } from '../../config/stored-errors.ts'
import type { Settings } from '../../config/settings.ts'
import { pipelineLimits } from '../limits.ts'
import { TaskError } from '../task-error.ts'
import { ISOLATE_READY } from './messages.ts'
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
  constructor(message: string, cause?: unknown, bound?: string) {
    // Not retried by the task's own `retries`: the same input would crash it again. The runner
    // decides: another try of the request, or quarantine.
    super(message, { kind: 'internal', retryable: false, cause, bound })
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
  /** Whose tasks they are (the run's requester): isolates are shared fairly between owners. */
  owner: string
  /** The task the isolate is running now: the next one to answer. */
  at: number
}

interface Slot {
  worker: Worker
  /**
   * It has loaded the task types (it said ISOLATE_READY). A batch goes only to an isolate that has:
   * sent to one still starting, it would wait there for the start (a second or more on a busy
   * machine) while another isolate may be free, and the start would count against its time.
   */
  ready: boolean
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
 * synchronous loop would never see an abort); a dead isolate is replaced at once, not when the next
 * task asks. A run's pure tasks that follow one another cross in one message (a batch,
 * `isolated-run.ts`): a crossing costs both threads more than most pure tasks do.
 * Shared fairly between owners (a run's requester): a free isolate goes to the waiting owner that
 * holds the fewest, its oldest batch first, so one requester's burst does not queue ahead of
 * another's task. `threads` isolates work for owners that hold one already; one more is kept warm
 * for an owner that holds none while the others are all held (more are started for more such
 * owners, up to twice `threads`), so another requester's slow or dying tasks do not hold it up.
 */
export class TaskIsolation {
  private readonly slots: Slot[] = []
  private readonly queue: Pending[] = []
  private nextId = 0
  private closed = false
  private readonly readyWaiters: { resolve: () => void; reject: (error: Error) => void }[] = []

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
    owner = 'anyone',
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
    this.queue.push({ message, tasks, owner, at: 0 })
    this.dispatch()
  }

  /** Isolates alive now (some may be starting): at least `threads` once warm. */
  get size(): number {
    return this.slots.length
  }

  /** Starts every isolate now (loading the task types takes a while), not at the first task. */
  warm(): void {
    while (!this.closed && this.slots.length < this.threads + 1) this.addSlot()
  }

  /**
   * Resolves once every isolate started so far has loaded, so a process can start serving with its
   * isolates ready (a runner's first runs would otherwise wait for them); rejects when one could not
   * start at all.
   */
  ready(): Promise<void> {
    if (this.slots.every((slot) => slot.ready)) return Promise.resolve()
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }))
  }

  private get threads(): number {
    return Math.max(1, this.options.threads)
  }

  /** Ends every isolate; tasks still queued or running fail. */
  async close(): Promise<void> {
    this.closed = true
    const stopped = new TaskError('stopped: the runner is closing')
    for (const waiter of this.readyWaiters.splice(0)) waiter.reject(stopped)
    for (const pending of this.queue.splice(0)) {
      pending.tasks[0]?.reject(stopped)
      for (const task of pending.tasks.slice(1)) task.notRun()
    }
    await Promise.all(this.slots.splice(0).map((slot) => this.end(slot)))
  }

  private dispatch(): void {
    for (;;) {
      const pending = this.fairest()
      const slot = pending && this.idleSlot(pending.owner)
      if (!pending || !slot) return
      this.queue.splice(this.queue.indexOf(pending), 1)
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

  /** The waiting batch of the owner that holds the fewest isolates; its oldest (the queue's order). */
  private fairest(): Pending | undefined {
    const held = new Map<string, number>()
    for (const slot of this.slots)
      if (slot.running) held.set(slot.running.owner, (held.get(slot.running.owner) ?? 0) + 1)
    let fairest: Pending | undefined
    let fewest = Infinity
    for (const pending of this.queue) {
      const holds = held.get(pending.owner) ?? 0
      if (holds < fewest) [fairest, fewest] = [pending, holds]
    }
    return fairest
  }

  /**
   * A loaded isolate for `owner`'s batch: `threads` work at once, more only for an owner that holds
   * none. When none is free, one is started unless one is starting already; the batch waits for it
   * (each isolate dispatches when it says it is ready).
   */
  private idleSlot(owner: string): Slot | undefined {
    const busy = this.slots.filter((slot) => slot.running).length
    const holdsNone = !this.slots.some((slot) => slot.running?.owner === owner)
    if (busy >= (holdsNone ? 2 * this.threads : this.threads)) return undefined
    const idle = this.slots.filter((slot) => !slot.running)
    if (idle.length === 0) this.addSlot()
    return idle.find((slot) => slot.ready)
  }

  private addSlot(): Slot {
    const slot: Slot = { worker: this.spawn(), ready: false }
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
    slot.worker.on('message', (answer: IsolatedTaskAnswer | typeof ISOLATE_READY) => {
      if (answer === ISOLATE_READY) return this.loaded(slot)
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
      if (!answer.last) return
      this.dispatch()
      // One started for an owner that had none is let go once nobody needs it.
      if (!slot.running && this.slots.length > this.threads + 1) this.retire(slot)
    })
    const died = (cause: unknown) => {
      if (!slot.ready) return this.failedToStart(slot, cause)
      const pending = slot.running
      this.replace(slot)
      const outOfMemory = (cause as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY'
      const why = outOfMemory
        ? `what it built passed its heap of RUN_ISOLATE_MEMORY_MB=${this.options.memoryMb}`
        : `it stopped (${cause instanceof Error ? cause.message : String(cause)})`
      const bound = outOfMemory ? 'RUN_ISOLATE_MEMORY_MB' : undefined
      if (pending) crashed(pending, new RunCrashedError(`its isolate died: ${why}`, cause, bound))
    }
    slot.worker.on('error', died)
    slot.worker.on('exit', (code) => {
      if (!this.closed && this.slots.includes(slot)) died(new Error(`the isolate exited (${code})`))
    })
  }

  private loaded(slot: Slot): void {
    slot.ready = true
    if (this.slots.every((each) => each.ready))
      for (const waiter of this.readyWaiters.splice(0)) waiter.resolve()
    this.dispatch()
  }

  /**
   * An isolate that died before it loaded: the task types could not be loaded (an install broken
   * or changed under the process), so it is not started again and again. Whoever waits for the
   * isolates is told, and, once no isolate is left, every batch waiting; a later batch starts one
   * again (one try a batch, not a loop).
   */
  private failedToStart(slot: Slot, cause: unknown): void {
    this.retire(slot)
    const why = cause instanceof Error ? cause.message : String(cause)
    const error = new FeedrunnerError(
      `an isolate for pure tasks could not start (${why}): the task types did not load; run \`npm install\` in the installation (or \`npm run build\` after an edit) and restart`,
      { kind: 'unavailable', cause },
    )
    for (const waiter of this.readyWaiters.splice(0)) waiter.reject(error)
    if (this.slots.length > 0) return
    for (const pending of this.queue.splice(0)) {
      pending.tasks[0]?.reject(error)
      for (const task of pending.tasks.slice(1)) task.notRun()
    }
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
        undefined,
        'task timeout',
      ),
    )
  }

  private free(slot: Slot): void {
    clearTimeout(slot.timer)
    slot.running = undefined
    slot.worker.unref()
  }

  /** Drops a dead or overrunning isolate and starts its successor now, before a task waits for it. */
  private replace(slot: Slot): void {
    this.retire(slot)
    if (!this.closed) this.warm()
    queueMicrotask(() => this.dispatch())
  }

  private retire(slot: Slot): void {
    this.free(slot)
    const at = this.slots.indexOf(slot)
    if (at >= 0) this.slots.splice(at, 1)
    void this.end(slot)
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

/**
 * The isolates a runner process runs pure tasks in, as the settings size them (RUN_ISOLATE_THREADS,
 * RUN_ISOLATE_MEMORY_MB, and the pipeline's limits), started at once so a first task does not wait
 * for one. `jobs run` makes the same, so a run off chain is bounded as the runner bounds it.
 */
export function isolationFromSettings(settings: Settings): TaskIsolation {
  const isolation = new TaskIsolation({
    threads: settings.RUN_ISOLATE_THREADS,
    memoryMb: settings.RUN_ISOLATE_MEMORY_MB,
    context: { limits: pipelineLimits(settings) },
  })
  isolation.warm()
  return isolation
}
