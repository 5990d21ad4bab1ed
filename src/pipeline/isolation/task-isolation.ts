import { Worker } from 'node:worker_threads'
import { FeedrunnerError, reviveError } from '../../config/errors.ts'
import type { Settings } from '../../config/settings.ts'
import { pipelineLimits } from '../limits.ts'
import { TaskError } from '../task.ts'
import type { IsolateContext, IsolatedTaskAnswer, IsolatedTaskMessage } from './messages.ts'
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

type Pending = {
  message: IsolatedTaskMessage
  timeoutMs: number
  /** Whose task it is (the run's requester): isolates are shared fairly between owners. */
  owner: string
  resolve: (value: unknown) => void
  reject: (error: Error) => void
}

interface Slot {
  worker: Worker
  running?: Pending
  timer?: NodeJS.Timeout
}

/** How long past its own timeout a task may hold its isolate before the isolate is ended. */
const OVERRUN_GRACE_MS = 1_000

/**
 * Pure pipeline tasks run in isolates: worker threads with their own bounded heap, one task at a
 * time each, so that whatever a decoder or library builds or loops on, it takes down no more than
 * its isolate (and its one task). A task that runs past its timeout has its isolate ended (a
 * synchronous loop would never see an abort); a dead isolate is replaced at once, not when the next
 * task asks.
 * Shared fairly between owners (a run's requester): a free isolate goes to the waiting owner that
 * holds the fewest, its oldest task first, so one requester's burst does not queue ahead of another's
 * task. `threads` isolates work for owners that hold one already; one more is kept warm for an owner
 * that holds none while the others are all held (more are started for more such owners, up to twice
 * `threads`), so another requester's slow or dying tasks do not hold it up.
 */
export class TaskIsolation {
  private readonly slots: Slot[] = []
  private readonly queue: Pending[] = []
  private nextId = 0
  private closed = false

  constructor(private readonly options: TaskIsolationOptions) {}

  /** Runs a task in an isolate; its value, or its error (of its kind), or RunCrashedError. */
  run(
    message: Omit<IsolatedTaskMessage, 'id'>,
    timeoutMs: number,
    owner = 'anyone',
  ): Promise<unknown> {
    if (this.closed) return Promise.reject(new TaskError('stopped: the runner is closing'))
    return new Promise((resolve, reject) => {
      const id = ++this.nextId
      this.queue.push({ message: { ...message, id }, timeoutMs, owner, resolve, reject })
      this.dispatch()
    })
  }

  /** Isolates alive now (some may be starting): at least `threads` once warm. */
  get size(): number {
    return this.slots.length
  }

  /** Starts every isolate now (loading the task types takes a while), not at the first task. */
  warm(): void {
    while (!this.closed && this.slots.length < this.threads + 1) this.addSlot()
  }

  private get threads(): number {
    return Math.max(1, this.options.threads)
  }

  /** Ends every isolate; tasks still queued or running fail. */
  async close(): Promise<void> {
    this.closed = true
    for (const pending of this.queue.splice(0))
      pending.reject(new TaskError('stopped: the runner is closing'))
    await Promise.all(this.slots.splice(0).map((slot) => this.end(slot)))
  }

  private dispatch(): void {
    for (;;) {
      const pending = this.fairest()
      const slot = pending && this.idleSlot(pending.owner)
      if (!pending || !slot) return
      this.queue.splice(this.queue.indexOf(pending), 1)
      slot.running = pending
      slot.timer = setTimeout(() => this.overrun(slot), pending.timeoutMs + OVERRUN_GRACE_MS)
      slot.timer.unref()
      // Held while it works (the process waits for its answer), let go while idle.
      slot.worker.ref()
      slot.worker.postMessage(pending.message)
    }
  }

  /** The waiting task of the owner that holds the fewest isolates; its oldest (the queue's order). */
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

  /** An isolate for `owner`'s task: `threads` work at once, more only for an owner that holds none. */
  private idleSlot(owner: string): Slot | undefined {
    const busy = this.slots.filter((slot) => slot.running).length
    const holdsNone = !this.slots.some((slot) => slot.running?.owner === owner)
    if (busy >= (holdsNone ? 2 * this.threads : this.threads)) return undefined
    return this.slots.find((slot) => !slot.running) ?? this.addSlot()
  }

  private addSlot(): Slot {
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
        resourceLimits: { maxOldGenerationSizeMb: this.options.memoryMb },
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
      if (!pending || pending.message.id !== answer.id) return
      this.free(slot)
      if (answer.ok) pending.resolve(decodeValue(answer.value))
      else pending.reject(reviveError(answer.error))
      this.dispatch()
      // One started for an owner that had none is let go once nobody needs it.
      if (!slot.running && this.slots.length > this.threads + 1) this.retire(slot)
    })
    const died = (cause: unknown) => {
      const pending = slot.running
      this.replace(slot)
      const outOfMemory = (cause as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY'
      const why = outOfMemory
        ? `what it built passed its heap of RUN_ISOLATE_MEMORY_MB=${this.options.memoryMb}`
        : `it stopped (${cause instanceof Error ? cause.message : String(cause)})`
      const bound = outOfMemory ? 'RUN_ISOLATE_MEMORY_MB' : undefined
      pending?.reject(new RunCrashedError(`its isolate died: ${why}`, cause, bound))
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
    pending.reject(
      new RunCrashedError(
        `it ran ${pending.timeoutMs + OVERRUN_GRACE_MS} ms and did not stop; its isolate was ended`,
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
