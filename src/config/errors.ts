import redisErrors from 'redis-errors'

/**
 * The one failure model of feedrunner. Every error the project throws is a `FeedrunnerError` (or a
 * subclass) with:
 *
 * - `kind`, one of ERROR_KINDS: what failed, for decisions (retry, metric labels, run-record reasons,
 *   CLI output). Decisions read the kind and `retryable`, never the message: a reworded message must
 *   not change a retry or a label.
 * - `retryable`: whether trying the same thing again later can succeed. Defaults by kind (`timeout`
 *   and `unavailable` are retryable, the rest are not); pass it to say otherwise (a 503 from upstream).
 * - the standard `cause`: the error this one wraps. The message of the outermost error says where
 *   (a task, a job, a request); the root cause says what went wrong at the bottom.
 *
 * The API, kept small on purpose:
 *
 * ```ts
 * throw new FeedrunnerError('the feed service answered 404: no match', { kind: 'upstream' })
 * throw new FeedrunnerError('task fetch', { kind: errorKindOf(error), cause: error })   // or:
 * throw withContext('task fetch', error)        // same kind and retryable as `error`, `error` as cause
 * errorKindOf(error)      // the kind of any thrown value ('internal' for what is not ours)
 * isRetryable(error)      // its retryable flag
 * rootCauseFirst(error)   // "the feed service answered 404: no match; task fetch, job x, request 0x4f"
 * serialiseError(error)   // {kind, message, retryable, causes} for Redis (run records, queue reasons)
 * reviveError(stored)     // back to a FeedrunnerError of the same kind, with its chain of causes
 * ```
 *
 * Subclasses add fields and fix the kind (`class SettingsError extends FeedrunnerError`); a new error
 * picks an existing kind rather than adding one: the union is closed so that every decision covers it.
 */
export const ERROR_KINDS = [
  /** What a caller gave is wrong (request parameters, a request's CBOR, a value that does not cast). */
  'bad_input',
  /** The operator's setup is wrong (a setting, a job spec, a jobs folder, a chains file). */
  'config',
  /** A service we called answered with an error, or with something we cannot use. */
  'upstream',
  /** Something did not finish in time. */
  'timeout',
  /** The chain node refused a transaction or a call (nonce, funds, gas limit, a bad transaction). */
  'node_refused',
  /** A transaction or a simulated call reverted on chain. */
  'reverted',
  /** Not allowed: a bad feed key, a sender key that is not authorised, a requester not admitted. */
  'not_authorised',
  /** Something we need cannot be reached now (Redis, a node, the adapter, a worker). */
  'unavailable',
  /** A bug or a state we did not expect; also every error that is not a FeedrunnerError. */
  'internal',
] as const
export type ErrorKind = (typeof ERROR_KINDS)[number]

const RETRYABLE_BY_DEFAULT: ReadonlySet<ErrorKind> = new Set(['timeout', 'unavailable'])

export interface FeedrunnerErrorOptions {
  kind: ErrorKind
  /** Defaults by kind: true for `timeout` and `unavailable`. */
  retryable?: boolean
  cause?: unknown
  /**
   * Which error of its kind, where callers tell them apart (a refusal's reason: `requester_busy`,
   * `expired`): a stable identifier, kept when the error is stored, never words to parse.
   */
  code?: string
  /**
   * The bound that stopped what failed, when one did: the setting (DECODE_MAX_NODES, PATH_MAX_VALUES,
   * RUN_ISOLATE_MEMORY_MB, ...) or the task's attribute. Read with boundOf; stored with the error.
   */
  bound?: string
}

export class FeedrunnerError extends Error {
  readonly kind: ErrorKind
  readonly retryable: boolean
  readonly code: string | undefined
  readonly bound?: string

  constructor(message: string, options: FeedrunnerErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'FeedrunnerError'
    this.kind = options.kind
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT.has(options.kind)
    this.code = options.code
    if (options.bound !== undefined) this.bound = options.bound
  }
}

/** The bound that stopped `error` or one of its causes (FeedrunnerErrorOptions.bound), if any. */
export function boundOf(error: unknown): string | undefined {
  for (let at: unknown = error; at instanceof Error; at = at.cause)
    if (at instanceof FeedrunnerError && at.bound !== undefined) return at.bound
  return undefined
}

/** The code of a FeedrunnerError in `error` or among its causes (the outermost one), or undefined. */
export function errorCodeOf(error: unknown): string | undefined {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 8; depth++) {
    if (at instanceof FeedrunnerError && at.code !== undefined) return at.code
    at = at.cause
  }
  return undefined
}

/**
 * Error codes of Node's network stack and undici (stable identifiers, not words), for errors that are
 * not ours: a refused connection is `unavailable`, a connect or read timeout is `timeout`.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
])
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
])

/**
 * Error codes of Redis's error replies (the reply's first word, as Redis defines them) that say it
 * cannot take the command now but will: full under `noeviction` (OOM), a replica or a demoted master
 * (READONLY), loading its data at a restart (LOADING), a long script running (BUSY), a replica that
 * lost its master or a cluster that lost slots (MASTERDOWN, CLUSTERDOWN, TRYAGAIN), too few replicas
 * for min-replicas-to-write (NOREPLICAS). A run that met one was failed for good until a Redis that
 * filled up for a minute showed it: its request stayed open on chain with nothing left to run it.
 */
const REDIS_NOT_NOW_CODES = new Set([
  'OOM',
  'READONLY',
  'LOADING',
  'BUSY',
  'MASTERDOWN',
  'CLUSTERDOWN',
  'TRYAGAIN',
  'NOREPLICAS',
])

/** The code of a Redis error reply (ioredis's ReplyError) itself, or undefined. */
function replyCodeOf(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return undefined
  return /^[A-Z]+/.exec(error.message)?.[0]
}

/** The code of the Redis error reply in an error or among its causes, or undefined when none is. */
export function redisReplyCode(error: unknown): string | undefined {
  for (const link of chainOf(error)) {
    const code = replyCodeOf(link)
    if (code !== undefined) return code
  }
  return undefined
}

/**
 * ioredis's own errors for a command its connection could not carry: aborted as the connection
 * closed under it (a restart, a failover), its retries run out (both AbortError, from the error
 * library ioredis uses), or refused while no connection stands. The last two are plain Errors, told
 * by the exact messages ioredis gives them (it has no class or code for them).
 */
const IOREDIS_NO_CONNECTION_MESSAGES = new Set([
  'Connection is closed.',
  "Stream isn't writeable and enableOfflineQueue options is false",
])

export function isRedisConnectionLoss(error: object): boolean {
  if (error instanceof redisErrors.AbortError) return true
  return error instanceof Error && IOREDIS_NO_CONNECTION_MESSAGES.has(error.message)
}

function foreignKind(error: unknown): ErrorKind | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const { code, name } = error as { code?: unknown; name?: unknown }
  if (name === 'TimeoutError' || (typeof code === 'string' && TIMEOUT_CODES.has(code)))
    return 'timeout'
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return 'unavailable'
  if (REDIS_NOT_NOW_CODES.has(replyCodeOf(error) ?? '')) return 'unavailable'
  if (isRedisConnectionLoss(error)) return 'unavailable'
  return undefined
}

/** The errors of a chain, outermost first, the root cause last (at most 20: a cycle cannot loop). */
function chainOf(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let at = error; at !== undefined && at !== null && chain.length < 20;) {
    if (chain.includes(at)) break
    chain.push(at)
    at = at instanceof Error ? at.cause : undefined
  }
  return chain
}

/**
 * The kind of any thrown value: a FeedrunnerError's own; for anything else, the kind its network
 * error code says (in it or in its causes: `fetch` wraps the socket error), or `internal`.
 */
export function errorKindOf(error: unknown): ErrorKind {
  if (error instanceof FeedrunnerError) return error.kind
  for (const link of chainOf(error)) {
    if (link instanceof FeedrunnerError) return link.kind
    const kind = foreignKind(link)
    if (kind) return kind
  }
  return 'internal'
}

/** Whether trying again later can help: a FeedrunnerError's flag, else by the kind errorKindOf finds. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof FeedrunnerError) return error.retryable
  for (const link of chainOf(error)) if (link instanceof FeedrunnerError) return link.retryable
  return RETRYABLE_BY_DEFAULT.has(errorKindOf(error))
}

/** Wraps `error` with where it happened ("task fetch"), keeping its kind and retryable flag. */
export function withContext(where: string, error: unknown): FeedrunnerError {
  return new FeedrunnerError(where, {
    kind: errorKindOf(error),
    retryable: isRetryable(error),
    cause: error,
  })
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  if (typeof error === 'string') return error
  return String(error)
}

/**
 * The chain as one line, root cause first, then where it happened from the nearest place outwards:
 * "the feed service answered 404: no match; task fetch, job game-odds, request 0x4f1c". A wrapper
 * whose message repeats its cause's (`requestData: ${cause.message}`) adds only its own words.
 */
export function rootCauseFirst(error: unknown): string {
  const messages = chainOf(error).map(messageOf)
  const root = messages.at(-1) ?? ''
  const places: string[] = []
  for (let index = messages.length - 2; index >= 0; index--) {
    const own = ownWords(messages[index]!, messages[index + 1]!)
    if (own !== '') places.push(own)
  }
  return places.length === 0 ? root : `${root}; ${places.join(', ')}`
}

/** A message without its cause's message in it (and the separators around it). */
function ownWords(message: string, causeMessage: string): string {
  if (causeMessage === '' || !message.includes(causeMessage)) return message.trim()
  return message
    .replace(causeMessage, ' ')
    .replace(/\(\s*\)/g, ' ')
    .trim()
    .replace(/^\((.*)\)$/, '$1')
    .replace(/[\s:;,(-]+$/, '')
    .replace(/^[\s:;,)-]+/, '')
    .replace(/\s{2,}/g, ' ')
    .trim()
}

/** One link of a stored error: an error, without its causes. */
export interface SerialisedLink {
  kind: ErrorKind
  message: string
  retryable: boolean
  code?: string
  bound?: string
}

/**
 * An error as it is stored (in Redis) and sent between threads: the outermost error, then its causes
 * outermost first. Read back from storage through `stored-errors.ts`, which checks it.
 */
export interface SerialisedError extends SerialisedLink {
  causes: SerialisedLink[]
}

function linkOf(error: unknown): SerialisedLink {
  const code = error instanceof FeedrunnerError ? error.code : undefined
  const bound = error instanceof FeedrunnerError ? error.bound : undefined
  return {
    kind: errorKindOf(error),
    message: messageOf(error),
    retryable: isRetryable(error),
    ...(code === undefined ? {} : { code }),
    ...(bound === undefined ? {} : { bound }),
  }
}

/**
 * `{kind, message, retryable, code?, causes}` of any thrown value (JSON-safe; a stack never leaves).
 * A cause in the same words as the link above it (a task's failure wraps the task's own error so) is
 * said once: a run record listed the bridge's message twice.
 */
export function serialiseError(error: unknown): SerialisedError {
  return saidOnce(chainOf(error).map(linkOf))
}

/** A stored error (a run record's, written before links were said once) with each link said once. */
export function withoutRepeats({ causes, ...top }: SerialisedError): SerialisedError {
  return saidOnce([top, ...causes])
}

function saidOnce(chain: readonly SerialisedLink[]): SerialisedError {
  const links: SerialisedLink[] = []
  for (const link of chain) {
    const above = links.at(-1)
    // A link said again is dropped, but what only it knows (the bound that stopped it, its code) stays.
    if (above && above.message === link.message)
      links[links.length - 1] = {
        ...above,
        ...(above.code === undefined && link.code !== undefined ? { code: link.code } : {}),
        ...(above.bound === undefined && link.bound !== undefined ? { bound: link.bound } : {}),
      }
    else links.push(link)
  }
  const [top, ...causes] = links
  return { ...top!, causes }
}

/**
 * A serialised error back as a FeedrunnerError of the same kind, with its causes as its `cause`
 * chain. It takes what serialiseError made (an isolate's answer); what was stored, and may be
 * anything, is read with `reviveError` (stored-errors.ts), which checks it first.
 */
export function errorFromLinks({ causes, message, ...top }: SerialisedError): FeedrunnerError {
  let cause: FeedrunnerError | undefined
  for (const { message: words, ...link } of [...causes].reverse())
    cause = new FeedrunnerError(words, { ...link, cause })
  return new FeedrunnerError(message, { ...top, cause })
}
