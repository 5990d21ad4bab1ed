/**
 * Variables that are set but misspelt: `NODE_PRIVATEKEY` for `NODE_PRIVATE_KEY` was never read, and
 * the process said "NODE_PRIVATE_KEY: required" or nothing at all until the first request needed it.
 * A variable whose name is close to a setting's, and is no setting itself, is named with the setting.
 */

/**
 * The EA framework's own settings (its `BaseSettingsDefinition`, 2.18.1), which the adapter reads
 * from the same environment: never taken for a misspelt feedrunner setting (`EA_HOST` is two letters
 * from `EA_PORT`). test/config/setting-names.test.ts keeps this list equal to the framework's.
 */
export const FRAMEWORK_SETTINGS: readonly string[] = [
  'API_TIMEOUT',
  'API_VERBOSE',
  'BASE_URL',
  'CACHE_LOCK_DURATION',
  'CACHE_LOCK_RETRIES',
  'CACHE_LOCK_DEFERRAL_MS',
  'CACHE_MAX_AGE',
  'CACHE_MAX_ITEMS',
  'CACHE_REDIS_CONNECTION_TIMEOUT',
  'CACHE_REDIS_HOST',
  'CACHE_REDIS_MAX_RECONNECT_COOLDOWN',
  'CACHE_REDIS_PASSWORD',
  'CACHE_REDIS_PATH',
  'CACHE_REDIS_PORT',
  'CACHE_REDIS_TIMEOUT',
  'CACHE_REDIS_URL',
  'CACHE_TYPE',
  'CACHE_PREFIX',
  'STREAM_HANDLER_RETRY_MAX_MS',
  'STREAM_HANDLER_RETRY_MIN_MS',
  'STREAM_HANDLER_RETRY_EXP_FACTOR',
  'SUBSCRIPTION_SET_MAX_ITEMS',
  'CORRELATION_ID_ENABLED',
  'DEBUG',
  'EA_PORT',
  'EXPERIMENTAL_METRICS_ENABLED',
  'LOG_LEVEL',
  'CENSOR_SENSITIVE_LOGS',
  'MAX_PAYLOAD_SIZE_LIMIT',
  'METRICS_ENABLED',
  'METRICS_PORT',
  'METRICS_USE_BASE_URL',
  'RATE_LIMIT_API_TIER',
  'RATE_LIMIT_CAPACITY',
  'RATE_LIMIT_CAPACITY_MINUTE',
  'RATE_LIMIT_CAPACITY_SECOND',
  'RETRY',
  'SSE_KEEPALIVE_SLEEP',
  'SSE_SUBSCRIPTION_TTL',
  'WARMUP_SUBSCRIPTION_TTL',
  'WS_SUBSCRIPTION_TTL',
  'WS_SUBSCRIPTION_UNRESPONSIVE_TTL',
  'WS_CONNECTION_OPEN_TIMEOUT',
  'WS_HEARTBEAT_INTERVAL_MS',
  'CACHE_POLLING_MAX_RETRIES',
  'CACHE_POLLING_SLEEP_MS',
  'DEFAULT_CACHE_KEY',
  'EA_HOST',
  'EA_MODE',
  'MAX_COMMON_KEY_SIZE',
  'FEED_ID_JSON',
  'MTLS_ENABLED',
  'TLS_ENABLED',
  'TLS_PRIVATE_KEY',
  'TLS_PUBLIC_KEY',
  'TLS_PASSPHRASE',
  'TLS_CA',
  'MAX_HTTP_REQUEST_QUEUE_LENGTH',
  'BACKGROUND_EXECUTE_MS_SSE',
  'BACKGROUND_EXECUTE_MS_WS',
  'BACKGROUND_EXECUTE_MS_HTTP',
  'BACKGROUND_EXECUTE_TIMEOUT',
  'RATE_LIMITING_STRATEGY',
  'REQUESTER_SLEEP_BEFORE_REQUEUEING_MS',
  'DEBUG_ENDPOINTS',
  'COMPOSITE_TRANSPORT',
]

/** Variables of a family named by pattern (BRIDGE_<NAME>_URL, FEED_KEY_<NAME>), and the bench's own. */
const PATTERNED = /^(?:BRIDGE_.+_URL|FEED_KEY_.+|BENCH_.+)$/

/** What a name looks like once case and underscores no longer count (`NODE_PRIVATEKEY`). */
function squeezed(name: string): string {
  return name.replace(/_/g, '').toUpperCase()
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  // Three rows of the table, reused: the one before the last, the last, and this one.
  let before = new Uint16Array(b.length + 1)
  let last = Uint16Array.from({ length: b.length + 1 }, (_, j) => j)
  let row = new Uint16Array(b.length + 1)
  for (let i = 1; i <= a.length; i++) {
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(last[j]! + 1, row[j - 1]! + 1, last[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, before[j - 2]! + 1)
      row[j] = best
    }
    ;[before, last, row] = [last, row, before]
  }
  return last[b.length]!
}

/**
 * The setting a variable name most likely meant, when it is not a name anyone reads itself: the same
 * letters without regard to underscores, or one edit away (two for names of ten letters or more).
 */
export function meantSetting(variable: string, settings: readonly string[]): string | undefined {
  if (!/^[A-Z][A-Z0-9_]{3,}$/.test(variable)) return undefined
  if (settings.includes(variable) || FRAMEWORK_SETTINGS.includes(variable)) return undefined
  if (PATTERNED.test(variable)) return undefined
  let best: { name: string; distance: number } | undefined
  const variableSqueezed = squeezed(variable)
  for (const name of settings) {
    const allowed = name.length >= 10 ? 2 : 1
    const same = squeezed(name) === variableSqueezed
    // Two names whose lengths differ by more than the edits allowed are further apart than that: most
    // pairs need no table (a table for each of ~100 variables and ~80 settings took a second of every
    // command's start on a loaded 2-core machine).
    if (!same && Math.abs(name.length - variable.length) > allowed) continue
    const distance = same ? 0 : editDistance(variable, name)
    if (distance <= allowed && (best === undefined || distance < best.distance))
      best = { name, distance }
  }
  return best?.name
}

/** One problem line per variable of `env` that reads as a misspelt setting. */
export function misspeltSettings(
  env: Readonly<Record<string, unknown>>,
  settings: readonly string[],
): string[] {
  const problems: string[] = []
  for (const variable of Object.keys(env).sort()) {
    const meant = meantSetting(variable, settings)
    if (meant)
      problems.push(
        `${variable}: did you mean ${meant}? (feedrunner reads no ${variable}: rename it; docs/configuration.md lists every setting)`,
      )
  }
  return problems
}
