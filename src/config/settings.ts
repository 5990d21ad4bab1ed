import { z } from 'zod'
import { FeedrunnerError } from './errors.ts'

/** The four feed families of the Data Feed Query Service; each has its own base URL and limits. */
export const FEED_FAMILIES = ['sports', 'blockchain', 'nft', 'weather'] as const
export type FeedFamily = (typeof FEED_FAMILIES)[number]

/** Settings whose values must never reach a log line, a queue payload, a metric or a response. */
export const SENSITIVE_SETTINGS = ['FEED_API_KEY', 'NODE_PRIVATE_KEY', 'NODE_PRIVATE_KEYS'] as const

const url = z.url({ message: 'expected a URL such as http://127.0.0.1:8080' })
const positiveInt = z.coerce.number().int().positive()
const boolean = z
  .enum(['true', 'false', '1', '0'], { message: 'expected true or false' })
  .transform((value) => value === 'true' || value === '1')
const privateKey = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, { message: 'expected a 0x-prefixed 32-byte hex private key' })

const familyUrls = {
  SPORTS_URL: url.optional(),
  BLOCKCHAIN_URL: url.optional(),
  NFT_URL: url.optional(),
  WEATHER_URL: url.optional(),
}

/**
 * Every setting feedrunner reads. Parts that need a setting ask for it with `required()`, so a
 * process that only serves feeds does not demand a node key.
 */
export const settingsSchema = z.object({
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),

  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, { message: 'expected redis://host:port[/db] or rediss://...' })
    .default('redis://127.0.0.1:6379'),
  /** Prefix of every BullMQ key, so several feedrunner installations can share one Redis. */
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]+$/, { message: 'expected letters, digits and _.:- only' })
    .default('feedrunner'),

  RPC_URL: z
    .string()
    .regex(/^(https?|wss?):\/\//, { message: 'expected an http(s):// or ws(s):// JSON-RPC URL' })
    .optional(),
  NODE_PRIVATE_KEY: privateKey.optional(),
  /** Extra sender keys, comma separated; each gets its own ordered transaction worker. */
  NODE_PRIVATE_KEYS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((key) => key.trim())
        .filter(Boolean),
    )
    .pipe(z.array(privateKey))
    .optional(),

  ...familyUrls,
  FEED_API_KEY: z.string().min(1, { message: 'expected a non-empty key' }).optional(),
  SIGNKEY_MODE: z.enum(['static', 'signed']).default('static'),
  SIGNKEY_TTL_SECONDS: positiveInt.default(300),
  ALLOW_CLIENT_KEYS: boolean.default(false),

  // Attempts x timeout + backoff (3 x 5 s + 0.6 s) stays inside ADAPTER_TIMEOUT_MS, which stays inside the specs' bridge timeout (20 s).
  FETCH_TIMEOUT_MS: positiveInt.default(5_000),
  FETCH_ATTEMPTS: positiveInt.default(3),
  FETCH_BACKOFF_MS: positiveInt.default(200),
  RATE_LIMIT_SPORTS_PER_SECOND: positiveInt.default(50),
  RATE_LIMIT_BLOCKCHAIN_PER_SECOND: positiveInt.default(50),
  RATE_LIMIT_NFT_PER_SECOND: positiveInt.default(50),
  RATE_LIMIT_WEATHER_PER_SECOND: positiveInt.default(50),
  CACHE_TTL_SPORTS_MS: positiveInt.default(30_000),
  CACHE_TTL_BLOCKCHAIN_MS: positiveInt.default(5_000),
  CACHE_TTL_NFT_MS: positiveInt.default(60_000),
  CACHE_TTL_WEATHER_MS: positiveInt.default(300_000),
  FETCH_WORKER_CONCURRENCY: positiveInt.default(32),

  JOBS_DIR: z.string().min(1).default('jobs'),
  /** Requests one runner process works on at once. */
  RUNNER_CONCURRENCY: positiveInt.default(64),
  /** Blocks a fulfilment's receipt must be deep before its run counts as fulfilled. */
  TX_CONFIRMATIONS: positiveInt.default(1),
  /**
   * The least time between two broadcasts of one key (ms); what is signed meanwhile leaves in the same
   * JSON-RPC batch. 0: as soon as the node has answered the one before (README, Performance).
   */
  TX_BROADCAST_INTERVAL_MS: z.coerce.number().int().nonnegative().max(10_000).default(50),
  /** How often the listener and the sender poll an HTTP RPC node for new heads. */
  CHAIN_POLL_INTERVAL_MS: positiveInt.default(1_000),
  /** First block a runner reads when Redis holds no checkpoint yet; default: the current head. */
  RUNNER_FROM_BLOCK: z.coerce.number().int().nonnegative().optional(),
  /** A request held by a crashed runner process is taken over after about this long. */
  RUNNER_LOCK_MS: positiveInt.default(30_000),
  EA_PORT: positiveInt.default(8080),
  /** How long an adapter request waits for its queued fetch (including retries) before answering 504. */
  ADAPTER_TIMEOUT_MS: positiveInt.default(18_000),

  /**
   * How far V8 lets a process's heap grow past its live objects before the next full collection, in
   * percent; 0 keeps V8's own factor, up to 4x on a machine with several GB (src/config/heap-growth.ts).
   */
  HEAP_GROWTH_PERCENT: z.coerce.number().int().min(0).max(300).default(30),
  /** /metrics, /live and /ready of a process that runs no adapter (`feedrunner runner`, `feedrunner worker`); 0 = off. */
  OPERATIONS_PORT: z.coerce.number().int().min(0).max(65_535).default(9090),
  /** The queues-and-runs dashboard on the adapter's server. */
  DASHBOARD_ENABLED: boolean.default(false),
  DASHBOARD_PATH: z
    .string()
    .regex(/^\/[A-Za-z0-9_\-/]*[A-Za-z0-9_-]$/, {
      message: 'expected a path such as /dashboard (no trailing slash)',
    })
    .default('/dashboard'),
  /** The dashboard shows and never changes (no retry, remove, pause); false lets it act on jobs. */
  DASHBOARD_READ_ONLY: boolean.default(true),
})

export type Settings = z.infer<typeof settingsSchema>

/** A setting that is missing or malformed; the message names the variable and what it expects. */
export class SettingsError extends FeedrunnerError {
  override readonly name = 'SettingsError'
  constructor(readonly problems: readonly string[]) {
    super(`Invalid settings:\n  ${problems.join('\n  ')}`, { kind: 'config' })
  }
}

/** The variables that are set: an empty value counts as unset, so the setting takes its default. */
export function presentVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '',
    ),
  )
}

/** Parses the environment once. Unknown variables are ignored; known ones must be valid. */
export function parseSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const parsed = settingsSchema.safeParse(presentVariables(env))
  if (parsed.success) return parsed.data
  const problems = parsed.error.issues.map((issue) => {
    const variable = issue.path.join('.')
    const shown = SENSITIVE_SETTINGS.includes(variable as (typeof SENSITIVE_SETTINGS)[number])
      ? ''
      : describeValue(env[variable])
    return `${variable}: ${issue.message}${shown}`
  })
  throw new SettingsError(problems)
}

function describeValue(value: string | undefined): string {
  return value === undefined ? ' (not set)' : ` (got ${JSON.stringify(value)})`
}

/** Returns a setting that this part of feedrunner cannot run without, or says which one is missing. */
export function required<K extends keyof Settings>(
  settings: Settings,
  name: K,
  neededFor: string,
): NonNullable<Settings[K]> {
  const value = settings[name]
  if (value === undefined || value === null) {
    throw new SettingsError([`${String(name)}: required for ${neededFor} (not set)`])
  }
  return value as NonNullable<Settings[K]>
}

/** Base URL of a feed family, from `<FAMILY>_URL`. */
export function familyBaseUrl(settings: Settings, family: FeedFamily): string {
  return required(
    settings,
    `${family.toUpperCase()}_URL` as keyof typeof familyUrls,
    `the ${family} feeds`,
  )
}

export function familyRateLimitPerSecond(settings: Settings, family: FeedFamily): number {
  return settings[`RATE_LIMIT_${family.toUpperCase()}_PER_SECOND` as `RATE_LIMIT_SPORTS_PER_SECOND`]
}

export function familyCacheTtlMs(settings: Settings, family: FeedFamily): number {
  return settings[`CACHE_TTL_${family.toUpperCase()}_MS` as `CACHE_TTL_SPORTS_MS`]
}

/** `BRIDGE_<NAME>_URL` for a job spec's `bridge name="..."`; names are matched case-insensitively. */
export function bridgeUrl(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const variable = `BRIDGE_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_URL`
  const value = env[variable]
  if (value === undefined || value === '') return undefined
  const parsed = url.safeParse(value)
  if (!parsed.success)
    throw new SettingsError([
      `${variable}: ${parsed.error.issues[0]?.message ?? 'invalid'} (got ${JSON.stringify(value)})`,
    ])
  return parsed.data
}

/** Every secret value currently configured, for redaction and for the leak tests. */
export function secretValues(settings: Settings): string[] {
  const values: string[] = []
  if (settings.FEED_API_KEY) values.push(settings.FEED_API_KEY)
  if (settings.NODE_PRIVATE_KEY)
    values.push(settings.NODE_PRIVATE_KEY, settings.NODE_PRIVATE_KEY.slice(2))
  for (const key of settings.NODE_PRIVATE_KEYS ?? []) values.push(key, key.slice(2))
  return values
}

/** `<FAMILY>_URL` for every family, all pointing at one service (the local feed service serves them all). */
export function allFamilyUrls(baseUrl: string): Record<string, string> {
  return Object.fromEntries(FEED_FAMILIES.map((family) => [`${family.toUpperCase()}_URL`, baseUrl]))
}
