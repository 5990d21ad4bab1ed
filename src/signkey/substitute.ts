import { randomUUID } from 'node:crypto'
import { required, type Settings } from '../config/settings.ts'
import { SignKeyError } from './errors.ts'
import { createSignKey } from './token.ts'

/** The placeholder a node-runner client sends as `key`; replaced by the node's own key. */
export const SIGN_KEY_PLACEHOLDER = '##signKey'
/** `##env:NAME`: the key is the value of the environment variable NAME. */
export const ENV_PLACEHOLDER_PREFIX = '##env:'

/**
 * The variables `##env:` may read. A request (possibly from a hostile contract) chooses NAME, so
 * it must never reach NODE_PRIVATE_KEY or any other secret that is not a feed key.
 */
export const ENV_KEY_NAME = /^(FEED_API_KEY|FEED_KEY_[A-Z0-9_]+)$/

export interface KeyContext {
  settings: Settings
  /** Environment read by `##env:NAME`; defaults to process.env. */
  env?: NodeJS.ProcessEnv
  endpoint: string
  /** Bound into a signed key; a random id is used when the caller has none. */
  requestId?: string
  /** Epoch milliseconds, for signed keys. */
  now?: number
}

/** `##signKey` or `##env:NAME`: substituted in `key` only, refused anywhere else. */
export function isPlaceholder(value: string): boolean {
  return value === SIGN_KEY_PLACEHOLDER || value.startsWith(ENV_PLACEHOLDER_PREFIX)
}

/** The node's own key: FEED_API_KEY (static mode) or a signed key for this request (signed mode). */
async function nodeKey(
  params: Readonly<Record<string, string>>,
  context: KeyContext,
): Promise<string> {
  const { settings } = context
  if (settings.SIGNKEY_MODE === 'static')
    return required(settings, 'FEED_API_KEY', '##signKey in static mode')
  return createSignKey({
    privateKey: required(settings, 'NODE_PRIVATE_KEY', '##signKey in signed mode'),
    requestId: context.requestId ?? randomUUID(),
    endpoint: context.endpoint,
    params,
    ttlSeconds: settings.SIGNKEY_TTL_SECONDS,
    ...(context.now !== undefined ? { now: context.now } : {}),
  })
}

function envKey(value: string, context: KeyContext): string {
  const name = value.slice(ENV_PLACEHOLDER_PREFIX.length)
  if (!ENV_KEY_NAME.test(name)) {
    throw new SignKeyError(
      'FORBIDDEN_ENV',
      `key: ##env:${name.slice(0, 64)} is not allowed (only FEED_API_KEY or FEED_KEY_* variables)`,
    )
  }
  const found = (context.env ?? process.env)[name]
  if (found === undefined || found === '')
    throw new SignKeyError('MISSING_SECRET', `key: environment variable ${name} is not set`)
  return found
}

/**
 * The real value of `key` for an outgoing request. `params` are the other query parameters as
 * they will be sent (a signed key is bound to them). A literal key from the caller is accepted
 * only with ALLOW_CLIENT_KEYS.
 */
export async function resolveKey(
  key: string | undefined,
  params: Readonly<Record<string, string>>,
  context: KeyContext,
): Promise<string> {
  if (key === undefined || key === '' || key === SIGN_KEY_PLACEHOLDER)
    return nodeKey(params, context)
  if (key.startsWith(ENV_PLACEHOLDER_PREFIX)) return envKey(key, context)
  if (context.settings.ALLOW_CLIENT_KEYS) return key
  throw new SignKeyError(
    'CLIENT_KEY_REFUSED',
    'key: a literal key from the request is not accepted (send ##signKey, or set ALLOW_CLIENT_KEYS=true)',
  )
}

/**
 * A copy of `query` whose `key` is the real key. Placeholders in any other parameter are refused:
 * they are substituted only in `key`, so a secret can never be sent (and echoed back) as data.
 */
export async function substituteQuery(
  query: Readonly<Record<string, string>>,
  context: KeyContext,
): Promise<Record<string, string>> {
  const { key, ...params } = query
  for (const [name, value] of Object.entries(params)) {
    if (isPlaceholder(value))
      throw new SignKeyError('FORBIDDEN_ENV', `${name}: placeholders are only substituted in key`)
  }
  return { ...params, key: await resolveKey(key, params, context) }
}
