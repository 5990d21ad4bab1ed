import { rootCauseFirst } from './errors.ts'
import { endpointOf } from './settings.ts'

/** The logger calls this module makes (a pino Logger fits). */
export interface OutageLog {
  warn(fields: Record<string, unknown>, message: string): void
  info(fields: Record<string, unknown>, message: string): void
}

export interface DependencyHealthOptions {
  /** What it is, as a person names it: "Redis", "the RPC node", "the sports feed service", "bridge datafeed". */
  dependency: string
  /** The setting that points at it: REDIS_URL, RPC_URL, SPORTS_URL, BRIDGE_DATAFEED_URL. */
  setting: string
  /** Its URL; only host and port are ever shown (a path or query may carry an API key). */
  url: string
  log: OutageLog
  /** While it stays down, one line this often (OUTAGE_REPORT_INTERVAL_MS). */
  reportEveryMs: number
  /** The clock, for tests. */
  now?: () => number
  /**
   * A cheap call that succeeds when the dependency answers again, tried every PROBE_INTERVAL_MS while
   * it is down, for a dependency that is otherwise only called when there is work, or whose
   * connections stay up while it refuses calls (a full Redis): back after PROBE_PASSES_FOR_BACK.
   */
  probe?: () => Promise<unknown>
  /**
   * For a failure that says more than "no answer" (a Redis that answers that it is full): what the
   * dependency does instead, and what to do about it; undefined for the rest.
   */
  refusal?: (error: unknown) => Refusal | undefined
}

/** A dependency that answers, but refuses: said instead of "is not answering". */
export interface Refusal {
  /** After the dependency's name: "refuses writes: its memory is full". */
  doing: string
  /** What the operator can do: "free memory or raise its maxmemory". */
  remedy: string
}

const PROBE_INTERVAL_MS = 1_000

/**
 * Probes that must pass in a row, with no failed call between them, before a probed dependency is
 * back. A Redis at its memory limit takes a write whenever expiries and completed jobs free a little
 * memory and refuses the next: one passing probe said "back" and the next call "down" again, a pair
 * of lines every few seconds.
 */
const PROBE_PASSES_FOR_BACK = 3

/**
 * One dependency's availability, reported as state changes rather than as one line per failed call:
 * a line when it stops answering (naming it, its setting, its host and port, and why), one line per
 * `reportEveryMs` while it stays down (with the number of calls that failed meanwhile), and a line
 * when it answers again (with how long it was down). Expected network errors never carry a stack.
 *
 * Several sources may report (each Redis connection of a process, say): the dependency is down from
 * the first failure and back once every source that failed has answered again.
 */
export class DependencyHealth {
  private readonly failing = new Set<string>()
  private downSince: number | undefined
  private failuresSinceReport = 0
  private failuresInOutage = 0
  /** Probes passed since the last failed call (PROBE_PASSES_FOR_BACK). */
  private probePasses = 0
  /** What the failure that began this outage said the dependency does instead of answering. */
  private refusal: Refusal | undefined
  private timer: NodeJS.Timeout | undefined
  private probeTimer: NodeJS.Timeout | undefined
  private readonly now: () => number
  readonly endpoint: string

  constructor(private readonly options: DependencyHealthOptions) {
    this.now = options.now ?? Date.now
    this.endpoint = endpointOf(options.url)
  }

  get down(): boolean {
    return this.downSince !== undefined
  }

  /** Failures in the current outage (0 while up). */
  get failures(): number {
    return this.failuresInOutage
  }

  /** A call or a connection attempt failed. `source` names a connection that will say when it is back. */
  failed(error: unknown, source = CALLS): void {
    this.failing.add(source)
    this.failuresSinceReport++
    this.failuresInOutage++
    this.probePasses = 0
    if (this.downSince !== undefined) return
    this.downSince = this.now()
    // This failure is the down line's; the next line counts those after it.
    this.failuresSinceReport = 0
    this.refusal = this.options.refusal?.(error)
    const reason = reasonOf(error)
    this.options.log.warn(
      { ...this.fields(), state: 'down', reason },
      this.refusal
        ? `${this.options.dependency} ${this.refusal.doing} (${this.where()}): ${reason.replace(/\.$/, '')}; ${this.refusal.remedy}`
        : `${this.options.dependency} is not answering (${this.where()}): ${reason}`,
    )
    this.timer = setInterval(() => this.reportStillDown(), this.options.reportEveryMs)
    this.timer.unref()
    const probe = this.options.probe
    if (probe) {
      // A failed probe is not a failed call: only the callers' failures are counted.
      this.probeTimer = setInterval(
        () =>
          void probe().then(
            () => {
              if (++this.probePasses >= PROBE_PASSES_FOR_BACK) this.answered(CALLS)
            },
            () => (this.probePasses = 0),
          ),
        PROBE_INTERVAL_MS,
      )
      this.probeTimer.unref()
    }
  }

  /** A call answered, or a connection is ready again. */
  answered(source = CALLS): void {
    if (this.downSince === undefined) return
    this.failing.delete(source)
    // Connections that failed say themselves when they are back; a call or a probe answers for calls.
    // A connection ready again answers for them only where nothing else can: a full Redis keeps its
    // connections up (or makes them again) while it refuses every write, and only its probe tells.
    if (source === CALLS || !this.options.probe) this.failing.delete(CALLS)
    if (this.failing.size > 0) return
    const downMs = this.now() - this.downSince
    this.options.log.info(
      { ...this.fields(), state: 'up', downMs, failures: this.failuresInOutage },
      `${this.options.dependency} answers again (${this.where()}) after ${formatDuration(downMs)} down; ${this.failuresInOutage} failed ${plural(this.failuresInOutage, 'call')} in all`,
    )
    this.reset()
  }

  /** A source that went away (a connection closed) no longer holds the dependency down. */
  forget(source: string): void {
    this.failing.delete(source)
  }

  /** Stops the "still down" lines (on shutdown). */
  close(): void {
    if (this.timer) clearInterval(this.timer)
    if (this.probeTimer) clearInterval(this.probeTimer)
    this.timer = undefined
    this.probeTimer = undefined
  }

  /** Runs `call`, reporting its outcome; what it throws is thrown on. */
  async track<T>(call: () => Promise<T>, isOutage: (error: unknown) => boolean): Promise<T> {
    try {
      const result = await call()
      this.answered()
      return result
    } catch (error) {
      if (isOutage(error)) this.failed(error)
      else this.answered()
      throw error
    }
  }

  private reportStillDown(): void {
    if (this.downSince === undefined) return
    const downMs = this.now() - this.downSince
    this.options.log.warn(
      { ...this.fields(), state: 'down', downMs, failures: this.failuresSinceReport },
      `${this.options.dependency} still ${this.refusal?.doing ?? 'not answering'} (${this.where()}) after ${formatDuration(downMs)}: ${this.failuresSinceReport} failed ${plural(this.failuresSinceReport, 'call')} since the last line`,
    )
    this.failuresSinceReport = 0
  }

  private reset(): void {
    this.close()
    this.downSince = undefined
    this.failuresSinceReport = 0
    this.failuresInOutage = 0
    this.probePasses = 0
    this.refusal = undefined
    this.failing.clear()
  }

  private where(): string {
    return `${this.options.setting} ${this.endpoint}`
  }

  private fields(): Record<string, unknown> {
    return {
      dependency: this.options.dependency,
      setting: this.options.setting,
      endpoint: this.endpoint,
    }
  }
}

const CALLS = 'calls'

function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`
}

/** "1 min 5 s", "12 s", "800 ms" */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`
  const seconds = Math.round(ms / 1_000)
  if (seconds < 60) return `${seconds} s`
  const minutes = Math.floor(seconds / 60)
  return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`
}

/**
 * Why a call failed, in a few words and without a URL: a network error's code (ECONNREFUSED,
 * ETIMEDOUT, from the error or its causes), else the first line of its message with any URL cut to
 * host and port.
 */
export function reasonOf(error: unknown): string {
  for (let at: unknown = error, depth = 0; at && depth < 5; depth++) {
    const code = (at as { code?: unknown }).code
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code)) return code
    at = (at as { cause?: unknown }).cause
  }
  // The root cause first: a wrapper says where it happened ("handler failed for request 0x4c..."),
  // its cause what happened ("OOM command not allowed ...").
  const line = rootCauseFirst(error).split('\n')[0] ?? ''
  return line.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"')]+/gi, (url) => endpointOf(url)).slice(0, 160)
}
