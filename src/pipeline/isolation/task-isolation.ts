import { Worker } from 'node:worker_threads'
import { FeedrunnerError } from '../../config/errors.ts'
import type { Settings } from '../../config/settings.ts'
import { pipelineLimits } from '../limits.ts'
import { TaskError } from '../task-error.ts'
import { Crossing, failBatch, type BatchTask, type QueuedBatch } from './crossing.ts'
import { ISOLATE_READY } from './messages.ts'
import type { IsolateContext, IsolateData, IsolatedAnswer, IsolatedBatch } from './messages.ts'
import { IsolateProgress, monotonicMs } from './progress.ts'

export type { BatchTask } from './crossing.ts'

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

interface Slot {
  worker: Worker
  /** Which task of its message it is running, in memory shared with it. */
  progress: IsolateProgress
  /**
   * It has loaded the task types (it said ISOLATE_READY). A batch goes only to an isolate that has:
   * sent to one still starting, it would wait there for the start (a second or more on a busy
   * machine) while another isolate may be free, and the start would count against its time.
   */
  ready: boolean
  running?: Crossing
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
 * The most batches of one owner sent in one message. Batches that wait together cross together:
 * a crossing wakes both threads, which costs more than most batches' tasks, and a burst's batches
 * wait together. Each waits for those before it in its message, so the group is kept small.
 */
const MAX_BATCHES_A_CROSSING = 8

/**
 * Pure pipeline tasks run in isolates: worker threads with their own bounded heap, one task at a
 * time each, so that whatever a decoder or library builds or loops on, it takes down no more than
 * its isolate (and its one task). A task that runs past its timeout has its isolate ended (a
 * synchronous loop would never see an abort); a dead isolate is replaced at once, not when the next
 * task asks. A run's pure tasks that follow one another cross in one message (a batch,
 * `isolated-run.ts`), and so do the batches of one owner that wait together (those asked for in one
 * turn of the event loop, or queued behind busy isolates): a crossing costs both threads more than
 * most pure tasks do. The isolate answers a message once, and says which task it runs meanwhile in
 * memory both threads share, which is all the time bound of each task needs.
 * Shared fairly between owners (a run's requester): a free isolate goes to the waiting owner that
 * holds the fewest, its oldest batch first, so one requester's burst does not queue ahead of
 * another's task. `threads` isolates work for owners that hold one already; when they are all held,
 * one more is started for an owner that holds none (more for more such owners, up to twice
 * `threads`), so another requester's slow or dying tasks do not hold it up. The first such one is
 * kept once started, and started only then: a runner that serves one requester never needs it, and
 * an isolate is about 16 MB (built) before it runs anything.
 */
export class TaskIsolation {
  private readonly slots: Slot[] = []
  private readonly queue: QueuedBatch[] = []
  private nextId = 0
  private closed = false
  private dispatchSoon?: NodeJS.Immediate
  private readonly readyWaiters: { resolve: () => void; reject: (error: Error) => void }[] = []

  constructor(private readonly options: TaskIsolationOptions) {}

  /** Messages sent to the isolates so far: one a batch, or one for batches that waited together. */
  crossings = 0

  /**
   * Runs tasks in an isolate, one after another, in one crossing. Each task is answered once its
   * batch has ended: its value, or its error (of its kind), or RunCrashedError when its isolate died
   * under it; each has its own time (its isolate is ended when it runs past it). The batch stops at
   * the first task that fails: those after it are told they did not run. The batch is sent once
   * this turn of the event loop is over, with the owner's other batches asked for meanwhile.
   */
  runBatch(
    tasks: readonly BatchTask[],
    shared: Pick<IsolatedBatch, 'vars' | 'outcomes'>,
    owner = 'anyone',
  ): void {
    if (tasks.length === 0) return
    const batch: QueuedBatch = { tasks, shared, owner }
    if (this.closed) return failBatch(batch, new TaskError('stopped: the runner is closing'))
    this.queue.push(batch)
    // None started yet: one starts now, not when the batch is sent (loading takes a while).
    if (this.slots.length === 0) this.addSlot()
    this.dispatchSoon ??= setImmediate(() => {
      this.dispatchSoon = undefined
      this.dispatch()
    })
  }

  /** Isolates alive now (some may be starting): at least `threads` once warm. */
  get size(): number {
    return this.slots.length
  }

  /** Starts the working isolates now (loading the task types takes a while), not at the first task. */
  warm(): void {
    while (!this.closed && this.slots.length < this.threads) this.addSlot()
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
    for (const batch of this.queue.splice(0)) failBatch(batch, stopped)
    await Promise.all(this.slots.splice(0).map((slot) => this.end(slot)))
  }

  private dispatch(): void {
    for (;;) {
      const first = this.fairest()
      const slot = first && this.idleSlot(first.owner)
      if (!first || !slot) return
      const crossing = new Crossing(++this.nextId, this.takeGroup(first))
      slot.running = crossing
      slot.progress.reset()
      this.armTimer(slot, crossing.shortestTimeoutFrom(0) + OVERRUN_GRACE_MS)
      // Held while it works (the process waits for its answer), let go while idle.
      slot.worker.ref()
      this.crossings++
      slot.worker.postMessage(crossing.message)
    }
  }

  /**
   * `first` and the batches of its owner queued after it, taken from the queue: as many as share
   * evenly the isolates it may hold now (`threads` of those free, less those it holds), at most
   * MAX_BATCHES_A_CROSSING.
   */
  private takeGroup(first: QueuedBatch): QueuedBatch[] {
    const free = this.slots.filter((slot) => slot.ready && !slot.running).length
    const holds = this.slots.filter((slot) => slot.running?.owner === first.owner).length
    const shares = Math.max(1, Math.min(free, this.threads - holds))
    const waiting = this.queue.filter((batch) => batch.owner === first.owner)
    const size = Math.min(MAX_BATCHES_A_CROSSING, Math.ceil(waiting.length / shares))
    const group = waiting.slice(waiting.indexOf(first), waiting.indexOf(first) + size)
    for (const batch of group) this.queue.splice(this.queue.indexOf(batch), 1)
    return group
  }

  private armTimer(slot: Slot, inMs: number): void {
    clearTimeout(slot.timer)
    slot.timer = setTimeout(() => this.lookAtTime(slot), inMs)
    slot.timer.unref()
  }

  /**
   * The running task's deadline, as its isolate's progress tells which task runs and since when:
   * its own time and the grace. Past it, the isolate is ended. Before it, the next look is at it,
   * or sooner if a task after it, were it to start now, would be past its own deadline sooner.
   */
  private lookAtTime(slot: Slot): void {
    const crossing = slot.running
    if (!crossing) return
    const { place, sinceMs } = slot.progress.read()
    const started = place < 0 ? crossing.sentAtMs : sinceMs
    const left = started + crossing.taskAt(place).timeoutMs + OVERRUN_GRACE_MS - monotonicMs()
    if (left <= 0) return this.overrun(slot, place)
    const next = crossing.shortestTimeoutFrom(Math.max(0, place) + 1) + OVERRUN_GRACE_MS
    this.armTimer(slot, Math.min(left, next))
  }

  /** The waiting batch of the owner that holds the fewest isolates; its oldest (the queue's order). */
  private fairest(): QueuedBatch | undefined {
    const held = new Map<string, number>()
    for (const slot of this.slots)
      if (slot.running) held.set(slot.running.owner, (held.get(slot.running.owner) ?? 0) + 1)
    let fairest: QueuedBatch | undefined
    let fewest = Infinity
    for (const batch of this.queue) {
      const holds = held.get(batch.owner) ?? 0
      if (holds < fewest) [fairest, fewest] = [batch, holds]
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
    const progress = new IsolateProgress()
    const slot: Slot = { worker: this.spawn(progress), progress, ready: false }
    this.slots.push(slot)
    this.watch(slot)
    return slot
  }

  private spawn(progress: IsolateProgress): Worker {
    // From the sources (tests, `npm start` before a build) the thread loads TypeScript through tsx,
    // found from here, not from the process's working directory (which may be anywhere).
    const fromSources = import.meta.url.endsWith('.ts')
    const worker = new Worker(
      new URL(`./isolate-thread.${fromSources ? 'ts' : 'js'}`, import.meta.url),
      {
        workerData: { ...this.options.context, progress: progress.buffer } satisfies IsolateData,
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
    slot.worker.on('message', (answer: IsolatedAnswer | typeof ISOLATE_READY) => {
      if (answer === ISOLATE_READY) return this.loaded(slot)
      const crossing = slot.running
      if (crossing?.message.id !== answer.id) return
      this.free(slot)
      crossing.answer(answer)
      this.dispatch()
      // One started for an owner that had none is kept (the next such owner finds it loaded); more
      // than that one are let go once nobody needs them.
      if (!slot.running && this.slots.length > this.threads + 1) this.retire(slot)
    })
    const died = (cause: unknown) => {
      if (!slot.ready) return this.failedToStart(slot, cause)
      const crossing = slot.running
      const { place } = slot.progress.read()
      this.replace(slot)
      const outOfMemory = (cause as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY'
      const why = outOfMemory
        ? `what it built passed its heap of RUN_ISOLATE_MEMORY_MB=${this.options.memoryMb}`
        : `it stopped (${cause instanceof Error ? cause.message : String(cause)})`
      const bound = outOfMemory ? 'RUN_ISOLATE_MEMORY_MB' : undefined
      if (crossing)
        this.crashed(crossing, place, new RunCrashedError(`its isolate died: ${why}`, cause, bound))
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
    for (const batch of this.queue.splice(0)) failBatch(batch, error)
  }

  /** A task past its time: its isolate is ended (a synchronous loop never sees an abort). */
  private overrun(slot: Slot, place: number): void {
    const crossing = slot.running
    if (!crossing) return
    this.replace(slot)
    const task = crossing.taskAt(place)
    this.crashed(
      crossing,
      place,
      new RunCrashedError(
        `it ran ${task.timeoutMs + OVERRUN_GRACE_MS} ms and did not stop; its isolate was ended`,
        undefined,
        'task timeout',
      ),
    )
  }

  /**
   * The task at `place` of the crossing crashed with its isolate; the crossing's other batches go
   * back to the front of the queue, in their order, to be sent again.
   */
  private crashed(crossing: Crossing, place: number, error: RunCrashedError): void {
    this.queue.unshift(...crossing.crashed(place, error))
  }

  private free(slot: Slot): void {
    clearTimeout(slot.timer)
    slot.running = undefined
    slot.worker.unref()
  }

  /** Drops a dead or overrunning isolate and starts its successor now, before a task waits for it. */
  private replace(slot: Slot): void {
    this.retire(slot)
    if (!this.closed) this.addSlot()
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
