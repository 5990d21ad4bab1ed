/**
 * Which task of its message an isolate is running, and since when, in memory both threads share.
 * The isolate answers a message once, when all of its tasks have ended; the main thread bounds each
 * task's own time by reading this when a timer fires, so keeping every task to its time costs no
 * message while the tasks keep to it.
 */
export class IsolateProgress {
  /** [the running task's place in its message, or -1 before the first has started] */
  private readonly at: Int32Array
  /** [when it started, ms on the process's monotonic clock] */
  private readonly since: Float64Array

  constructor(readonly buffer = new SharedArrayBuffer(16)) {
    this.at = new Int32Array(buffer, 0, 1)
    this.since = new Float64Array(buffer, 8, 1)
  }

  /** Main thread, before it sends a message to an idle isolate: nothing of it has started. */
  reset(): void {
    Atomics.store(this.at, 0, -1)
  }

  /** Isolate: the task at `place` in its message starts now (returned: when). */
  starting(place: number): number {
    const now = monotonicMs()
    this.since[0] = now
    // The place is stored last (and atomically): whoever reads it sees its start time too, or a
    // later one, which only moves that task's deadline later until the next look.
    Atomics.store(this.at, 0, place)
    return now
  }

  /** Main thread: the running task's place (-1: none started yet) and when it started. */
  read(): { place: number; sinceMs: number } {
    const place = Atomics.load(this.at, 0)
    return { place, sinceMs: this.since[0] as number }
  }
}

/** The process's monotonic clock, the same in every thread (a task's time is not the wall's). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6
}
