/**
 * How many fetches a family's worker runs at once, read from how long its fetches take, as TCP Vegas
 * and BBR read a round trip. A fetch whose time grows with the number running beside it is waiting
 * for this host's CPU (the feed service answers from the same machine, or the worker's own event loop
 * is full): then more at once only makes every fetch slower, another client's included, so the limit
 * goes down. A fetch whose time does not grow is waiting for the network: then the limit goes up to
 * FETCH_WORKER_CONCURRENCY, whose fetches a second are the limit over the feed's answer time.
 *
 * The limit moves once a window: as many answered fetches as the limit (at least MIN_WINDOW), each
 * started after the window began, so a window's times are those of its own limit. After the limit
 * shrinks, the worker still starts fetches it took under the old one (BullMQ takes a job's
 * successor as it settles it, and a burst of fetches that settle together brings a burst of
 * successors): a fetch that starts with more running than the limit begins the window again. Its
 * median against the baseline, what a fetch takes with few beside it:
 * - more than TOLERANCE times the baseline: the limit shrinks in proportion (at most by half);
 * - within it, and the limit was reached in the window: it grows by a quarter (at least one).
 *
 * The baseline is what a window with no more running at once than the lowest limit took: a probe,
 * one window run at the lowest limit (as BBR's ProbeRTT), or any window that ran so few. A window
 * within a tenth of the baseline (or faster) confirms it. A probe runs when the worker is first
 * busy, and before the limit shrinks on a baseline that no window confirmed for PROBE_AFTER_MS: if
 * the feed got slower for everyone, the probe is slow too, and its time becomes the baseline; after
 * a probe the limit goes back to where it was.
 */
export interface FetchConcurrencyBounds {
  /** The lowest limit (FETCH_WORKER_MIN_CONCURRENCY), and the probe's. */
  readonly min: number
  /** The highest limit (FETCH_WORKER_CONCURRENCY), where it starts. */
  readonly max: number
}

/** A window's median may be this many times the baseline before the limit shrinks. */
const TOLERANCE = 2
const MIN_WINDOW = 8
export const PROBE_AFTER_MS = 2_000
/** A fetch alone within a millisecond is measured to a jitter of about that much. */
const BASELINE_FLOOR_MS = 1
/** A window within this share above the baseline confirms it. */
const CONFIRMS = 1.1

interface Baseline {
  ms: number
  /** When a window last measured or confirmed it (the caller's monotonic clock). */
  at: number
}

interface Window {
  /** Infinity until its first fetch starts. */
  startedAt: number
  times: number[]
  /** The most fetches running at once when one of the window's started. */
  peak: number
  limitReached: boolean
}

export class FetchConcurrency {
  readonly min: number
  readonly max: number
  private current: number
  private baseline: Baseline | undefined
  /** The limit to go back to after a probe; set while one runs. */
  private probeRestores: number | undefined
  private window: Window = waitingWindow()

  constructor(bounds: FetchConcurrencyBounds) {
    this.max = Math.max(1, Math.floor(bounds.max))
    this.min = Math.min(this.max, Math.max(1, Math.floor(bounds.min)))
    this.current = this.max
  }

  /** Fetches to run at once now. */
  get limit(): number {
    return this.current
  }

  /** A fetch started at `at` (ms, the caller's monotonic clock), `running` with it included. */
  started(at: number, running: number): void {
    if (running > this.current) {
      this.window = waitingWindow()
      return
    }
    if (this.window.startedAt === Infinity) this.window.startedAt = at
    this.window.peak = Math.max(this.window.peak, running)
    if (running >= this.current) this.window.limitReached = true
  }

  /**
   * A fetch that started at `startedAt` answered at `now`; returns the limit, changed or not.
   * Failed fetches are not given: a timeout says nothing of this host.
   */
  answered(startedAt: number, now: number): number {
    if (startedAt < this.window.startedAt) return this.current
    this.window.times.push(now - startedAt)
    if (this.window.times.length >= Math.max(MIN_WINDOW, this.current)) this.closeWindow(now)
    return this.current
  }

  private closeWindow(now: number): void {
    const { times, peak, limitReached } = this.window
    const median = medianOf(times)
    this.window = waitingWindow()
    const baseline = this.rebase(median, peak, now)
    if (this.probeRestores !== undefined) {
      this.current = this.probeRestores
      this.probeRestores = undefined
      return
    }
    const ratio = median / Math.max(BASELINE_FLOOR_MS, baseline?.ms ?? median)
    const stale = !baseline || (ratio > TOLERANCE && now - baseline.at > PROBE_AFTER_MS)
    if (stale && limitReached && this.current > this.min) {
      this.probeRestores = this.current
      this.current = this.min
    } else if (ratio > TOLERANCE) {
      const shrunk = Math.floor(this.current * Math.max(0.5, TOLERANCE / ratio))
      this.current = Math.max(this.min, shrunk)
    } else if (limitReached) {
      this.current = Math.min(this.max, this.current + Math.max(1, Math.floor(this.current / 4)))
    }
  }

  /** The baseline after a window of `median` with at most `peak` running at once. */
  private rebase(median: number, peak: number, now: number): Baseline | undefined {
    const baseline = this.baseline
    if (peak <= this.min) this.baseline = { ms: median, at: now }
    else if (baseline && median <= baseline.ms * CONFIRMS)
      this.baseline = { ms: Math.min(median, baseline.ms), at: now }
    return this.baseline
  }
}

function waitingWindow(): Window {
  return { startedAt: Infinity, times: [], peak: 0, limitReached: false }
}

function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * Wraps a fetch worker's processor so that each answered fetch's time moves `concurrency`, and
 * `apply` gets the limit whenever it changed (the worker's `concurrency`, which BullMQ reads before
 * it takes each next job).
 */
export function adaptConcurrency<P extends (...args: never[]) => Promise<unknown>>(
  processor: P,
  concurrency: FetchConcurrency,
  apply: (limit: number) => void,
): P {
  let running = 0
  const adapted = async (...args: Parameters<P>): Promise<Awaited<ReturnType<P>>> => {
    const startedAt = performance.now()
    concurrency.started(startedAt, ++running)
    try {
      const result = (await processor(...args)) as Awaited<ReturnType<P>>
      const before = concurrency.limit
      const limit = concurrency.answered(startedAt, performance.now())
      if (limit !== before) apply(limit)
      return result
    } finally {
      running--
    }
  }
  return adapted as P
}
