import { z } from 'zod'
import { FeedrunnerError } from './errors.ts'
import { misspeltSettings } from './setting-names.ts'
import { settingExpectation } from './settings-expectation.ts'
import {
  declaredSettings,
  FEED_FAMILIES,
  type FeedFamily,
  type SettingInfo,
} from './settings-declared.ts'

export { FEED_FAMILIES, SETTING_PATTERNS, type FeedFamily } from './settings-declared.ts'
export type { SettingGroup, SettingInfo } from './settings-declared.ts'

type Declared = typeof declaredSettings
export type SettingName = keyof Declared

/**
 * Every setting feedrunner reads, declared once in `settings-declared.ts` with its description,
 * default, unit and sensitivity. Parts that need a setting ask for it with `required()`, so a process
 * that only serves feeds does not demand a node key.
 */
export const settingsSchema = z.object(
  Object.fromEntries(
    Object.entries(declaredSettings).map(([name, declared]) => [name, declared.schema]),
  ) as { [K in SettingName]: Declared[K]['schema'] },
)

export type Settings = z.infer<typeof settingsSchema>

/** Every declared setting's name. */
export const SETTING_NAMES: readonly string[] = Object.keys(declaredSettings)

/** Every setting's default (the schema's), for a part started without settings (a test's sender). */
export const DEFAULT_SETTINGS: Settings = settingsSchema.parse({})

/** What each setting is, for the docs, `.env.example` and redaction (`settings-docs.ts`). */
export const SETTINGS: { readonly [K in SettingName]: SettingInfo } = Object.fromEntries(
  Object.entries(declaredSettings).map(([name, declared]) => [name, declared.info]),
) as { [K in SettingName]: SettingInfo }

/** Settings whose values must never reach a log line, a queue payload, a metric or a response. */
export const SENSITIVE_SETTINGS: readonly SettingName[] = (
  Object.keys(SETTINGS) as SettingName[]
).filter((name) => SETTINGS[name].sensitive)

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

/**
 * Reads `.env` from the working directory into `process.env`, once, before the settings are parsed.
 * A variable already in the environment wins over the file (Node's own `process.loadEnvFile` never
 * overwrites one). Returns the file's path when there was one.
 */
export function loadDotEnv(path = '.env'): string | undefined {
  try {
    process.loadEnvFile(path)
    return path
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new SettingsError([
      `${path}: could not be read (${(error as Error).message}); fix or remove the file`,
    ])
  }
}

/**
 * Parses the environment once (a process's composition root calls this and hands the result on).
 * Unknown variables are ignored; known ones must be valid. Every problem is reported at once, each
 * naming the variable; a sensitive value is never repeated, and a URL only as its host and port.
 */
export function parseSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const present = presentVariables(env)
  const parsed = settingsSchema.safeParse(present)
  // A misspelt name is reported with the schema's problems: its setting was never read.
  const misspelt = misspeltSettings(present, SETTING_NAMES)
  if (parsed.success && misspelt.length > 0) throw new SettingsError(misspelt)
  if (parsed.success) {
    // Redis Cluster runs a Lua script or a MULTI only on keys of one slot: BullMQ's keys of a queue
    // share the prefix, and the hash tag in braces makes them share the slot.
    const { REDIS_URL, QUEUE_PREFIX } = parsed.data
    if (REDIS_URL.startsWith('redis+cluster://') && !/\{[^}]+\}/.test(QUEUE_PREFIX))
      throw new SettingsError([
        `QUEUE_PREFIX: a Redis Cluster (REDIS_URL redis+cluster://...) needs a hash tag in braces, e.g. {${QUEUE_PREFIX}} (got ${JSON.stringify(QUEUE_PREFIX)})`,
      ])
    return parsed.data
  }
  // One problem per setting: a value zod refuses for two reasons ("1.5" for a port) is said once.
  const problems = new Set(
    parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0])
      const item = typeof issue.path[1] === 'number' ? ` (item ${issue.path[1] + 1})` : ''
      const declared = declaredSettings[variable as SettingName] as
        { schema: z.ZodType; info: SettingInfo } | undefined
      const expected = declared && settingExpectation(declared.schema, declared.info)
      const message = expected ? `expected ${expected}` : issue.message
      // "NODE_PRIVATE_KEY is not a valid ...", "EA_PORT: expected a port number ..."
      const joint = message.startsWith('is ') ? ' ' : ': '
      return `${variable}${item}${joint}${message}${shownValue(variable, env[variable])}`
    }),
  )
  throw new SettingsError([...misspelt, ...problems])
}

function shownValue(variable: string, value: string | undefined): string {
  if (value === undefined) return ' (not set)'
  const info = SETTINGS[variable as SettingName] as SettingInfo | undefined
  if (info?.sensitive) return ''
  if (info?.unit === 'URL') return ` (got ${endpointOf(value)})`
  return ` (got ${JSON.stringify(value)})`
}

/**
 * `host:port` of a URL, the only part of it a message shows: an RPC or Redis URL may carry an API key
 * in its path, query or user info.
 */
export function endpointOf(url: string): string {
  // redis+cluster://[user:password@]host:port,host:port: the node list, without the credentials.
  const cluster = /^redis\+cluster:\/\/(?:[^@/]*@)?([^/?#@]+)/.exec(url)
  if (cluster) return cluster[1] as string
  try {
    const parsed = new URL(url)
    const port = parsed.port || DEFAULT_PORTS[parsed.protocol] || ''
    return port ? `${parsed.hostname}:${port}` : parsed.hostname || 'a URL without a host'
  } catch {
    return 'a value that is not a URL'
  }
}

const DEFAULT_PORTS: Record<string, string> = {
  'http:': '80',
  'https:': '443',
  'ws:': '80',
  'wss:': '443',
  'redis:': '6379',
  'rediss:': '6379',
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
  return required(settings, familyUrlSetting(family), `the ${family} feeds`)
}

export function familyUrlSetting(family: FeedFamily): 'SPORTS_URL' {
  return `${family.toUpperCase()}_URL` as 'SPORTS_URL'
}

export function familyRateLimitPerSecond(settings: Settings, family: FeedFamily): number {
  return settings[`RATE_LIMIT_${family.toUpperCase()}_PER_SECOND` as `RATE_LIMIT_SPORTS_PER_SECOND`]
}

export function familyCacheTtlMs(settings: Settings, family: FeedFamily): number {
  return settings[`CACHE_TTL_${family.toUpperCase()}_MS` as `CACHE_TTL_SPORTS_MS`]
}

/** The variable that holds a job spec bridge's URL: `BRIDGE_<NAME>_URL`. */
export function bridgeUrlSetting(name: string): string {
  return `BRIDGE_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_URL`
}

/** `BRIDGE_<NAME>_URL` for a job spec's `bridge name="..."`; names are matched case-insensitively. */
export function bridgeUrl(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const variable = bridgeUrlSetting(name)
  const value = env[variable]
  if (value === undefined || value === '') return undefined
  const checked = checkedBridgeUrls.get(value)
  if (checked !== undefined) return checked
  const parsed = z.url().safeParse(value)
  if (!parsed.success)
    throw new SettingsError([
      `${variable}: expected a URL such as http://127.0.0.1:8080 (got ${endpointOf(value)})`,
    ])
  if (checkedBridgeUrls.size < MAX_CHECKED_BRIDGE_URLS) checkedBridgeUrls.set(value, parsed.data)
  return parsed.data
}

/** Bridge URLs already checked, by value: a bridge task reads its URL on every run (1 % of a burst's CPU). */
const checkedBridgeUrls = new Map<string, string>()
const MAX_CHECKED_BRIDGE_URLS = 64

/** `<FAMILY>_URL` for every family, all pointing at one service (the local feed service serves them all). */
export function allFamilyUrls(baseUrl: string): Record<string, string> {
  return Object.fromEntries(FEED_FAMILIES.map((family) => [familyUrlSetting(family), baseUrl]))
}
