/**
 * Liveness and readiness of a feedrunner process.
 *
 * - Readiness: every dependency the running parts need answers (Redis, the RPC node) and their
 *   workers run. While one is down, /ready answers 503 and names it, so a load balancer stops sending
 *   requests and an operator sees which one; it recovers by itself when the dependency does.
 * - Liveness: only what a restart can fix: a worker that has closed. A Redis or RPC outage is not a
 *   reason to restart the process (it reconnects), so it does not fail liveness.
 */
export interface HealthCheck {
  /** Short fixed name: `redis`, `rpc`, `fetch-workers`, ... (shown in the answer). */
  readonly name: string
  /**
   * Resolves when healthy (with a few words when it is degraded but serving: a chain with one RPC
   * endpoint left); rejects with an error whose message says what is wrong (no URL, no secret).
   */
  check(): Promise<void | string>
  /** Also part of liveness. */
  readonly live?: boolean
  /** Releases what the check holds (a connection), when its last user removes it. */
  close?(): Promise<void> | void
}

export interface CheckResult {
  ok: boolean
  ms: number
  error?: string
  /** Healthy enough to serve, with something worth knowing (`degraded: ...`). */
  detail?: string
}

export interface HealthReport {
  status: 'ok' | 'unavailable'
  /** Names of the failing checks. */
  down: string[]
  checks: Record<string, CheckResult>
}

const CHECK_TIMEOUT_MS = 2_000

export class Health {
  private readonly checks = new Map<string, { check: HealthCheck; users: number }>()

  /**
   * Adds a check; a check with the same name is shared (several parts of one process need Redis):
   * the first one added is kept until every part that added one has removed it.
   */
  add(check: HealthCheck): () => Promise<void> {
    const existing = this.checks.get(check.name)
    if (existing) {
      existing.users += 1
      if (existing.check !== check) void check.close?.()
    } else this.checks.set(check.name, { check, users: 1 })
    let removed = false
    return async () => {
      if (removed) return
      removed = true
      const entry = this.checks.get(check.name)
      if (!entry) return
      entry.users -= 1
      if (entry.users === 0) {
        this.checks.delete(check.name)
        await entry.check.close?.()
      }
    }
  }

  names(): string[] {
    return [...this.checks.keys()]
  }

  readiness(): Promise<HealthReport> {
    return this.run([...this.checks.values()].map((entry) => entry.check))
  }

  liveness(): Promise<HealthReport> {
    return this.run(
      [...this.checks.values()].map((entry) => entry.check).filter((check) => check.live),
    )
  }

  private async run(checks: HealthCheck[]): Promise<HealthReport> {
    const results = await Promise.all(
      checks.map(async (check) => [check.name, await runCheck(check)] as const),
    )
    const down = results.filter(([, result]) => !result.ok).map(([name]) => name)
    return {
      status: down.length === 0 ? 'ok' : 'unavailable',
      down,
      checks: Object.fromEntries(results),
    }
  }
}

async function runCheck(check: HealthCheck): Promise<CheckResult> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)),
      CHECK_TIMEOUT_MS,
    )
  })
  try {
    const detail = await Promise.race([check.check(), timeout])
    return {
      ok: true,
      ms: Math.round(performance.now() - started),
      ...(typeof detail === 'string' ? { detail } : {}),
    }
  } catch (error) {
    return {
      ok: false,
      ms: Math.round(performance.now() - started),
      error: error instanceof Error ? error.message : String(error),
    }
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The process's health: the parts a process runs add their checks here, and every health endpoint
 * of the process (the adapter's server, the operations port) answers from it. Kept on globalThis so
 * a module loaded twice in one process still shares it.
 */
const HEALTH_KEY = Symbol.for('feedrunner.health')
const holder = globalThis as typeof globalThis & { [HEALTH_KEY]?: Health }
export const processHealth: Health = (holder[HEALTH_KEY] ??= new Health())
