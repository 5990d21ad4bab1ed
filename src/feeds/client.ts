import { secretScrubber, type Scrubber } from '../config/secret-scrub.ts'
import { familyBaseUrl, type Settings } from '../config/settings.ts'
import { nestingBeyond, readBounded } from '../net/bounded-body.ts'
import { DecodeBudgetError, NodeBudget } from '../net/decode-budget.ts'
import { substituteQuery } from '../signkey/index.ts'
import {
  envelopeSchema,
  FeedDataError,
  FeedParamsError,
  findEndpoint,
  parseFeedData,
  parseParams,
  type CatalogEntry,
  type EndpointName,
  type Envelope,
  type ValidatedParams,
} from './catalog/index.ts'
import { isRetryableStatus, UpstreamError } from './upstream-error.ts'

export interface FetchFeedOptions {
  settings: Settings
  /** Bound into a signed key (the on-chain request id, or the adapter's). */
  requestId?: string
  /** Aborts the call (e.g. the caller gave up). */
  signal?: AbortSignal
  /** Defaults to settings.FETCH_TIMEOUT_MS. */
  timeoutMs?: number
  /** Environment for `##env:NAME` keys; defaults to process.env. */
  env?: NodeJS.ProcessEnv
  /** Base URL instead of the family's `<FAMILY>_URL` setting. */
  baseUrl?: string
}

export interface FeedResult {
  endpoint: EndpointName
  /** The parameters sent, normalised, without `key`. */
  params: ValidatedParams
  /** The service's envelope; `data` is the normalised data below. */
  envelope: Envelope & { data: Record<string, unknown> }
  /** `data`, validated, with canonical twins of aliased fields added (originals kept). */
  data: Record<string, unknown>
  /** The URL called, with the key replaced by `[redacted]` (safe to log). */
  url: string
}

/** The most of an upstream's own words that travel on (to the requester, a log line, Redis). */
export const UPSTREAM_EXCERPT_CHARS = 200

/**
 * An upstream's words as they may travel on: the key removed in every form, whole or in part
 * (secret-scrub.ts, partial), control characters and runs of space made one space, then cut to
 * UPSTREAM_EXCERPT_CHARS. Scrubbed before it is cut, so that the cut cannot leave a piece of a key
 * too short to be recognised.
 */
function excerpt(text: string, scrub: Scrubber): string {
  const clean = scrub(text)
    .replace(/[\p{Cc}\s]+/gu, ' ')
    .trim()
  return clean.length > UPSTREAM_EXCERPT_CHARS
    ? `${clean.slice(0, UPSTREAM_EXCERPT_CHARS)}... (${clean.length} characters)`
    : clean
}

/** The URL of an endpoint for the given query; `key` goes last so logs can cut it easily. */
export function feedUrl(
  baseUrl: string,
  entry: CatalogEntry,
  query: Readonly<Record<string, string>>,
): URL {
  const url = new URL(baseUrl.replace(/\/+$/, '') + entry.path)
  const { key, ...rest } = query
  url.search = new URLSearchParams({ ...rest, ...(key !== undefined ? { key } : {}) }).toString()
  return url
}

function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = (error as { cause?: unknown }).cause
  const causeText =
    cause instanceof Error
      ? `${(cause as { code?: string }).code ?? ''} ${cause.message}`.trim()
      : ''
  return causeText ? `${error.message}: ${causeText}` : error.message
}

/**
 * The body as text, read under FETCH_MAX_RESPONSE_BYTES while it streams (leaving the read cancels
 * the stream and its connection), so an endless answer costs at most the cap.
 */
async function readBody(
  entry: CatalogEntry,
  response: Response,
  maxBytes: number,
): Promise<string> {
  const read = await readBounded(response.body, maxBytes)
  if (!read.ok) {
    throw new UpstreamError(
      entry.name,
      'bad-envelope',
      `the feed service sent more than ${maxBytes} bytes (FETCH_MAX_RESPONSE_BYTES); the connection was closed`,
      { httpStatus: response.status, retryable: false },
    )
  }
  return read.bytes.toString('utf8')
}

async function get(
  entry: CatalogEntry,
  url: URL,
  options: FetchFeedOptions,
  scrub: Scrubber,
): Promise<{ status: number; body: string }> {
  const timeoutMs = options.timeoutMs ?? options.settings.FETCH_TIMEOUT_MS
  const timeout = AbortSignal.timeout(timeoutMs)
  const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout
  try {
    // No redirects: the key is in the URL and must not follow one to another host.
    const response = await fetch(url, {
      signal,
      headers: { accept: 'application/json' },
      redirect: 'error',
    })
    return {
      status: response.status,
      body: await readBody(entry, response, options.settings.FETCH_MAX_RESPONSE_BYTES),
    }
  } catch (error) {
    if (error instanceof UpstreamError) throw error
    if (timeout.aborted)
      throw new UpstreamError(
        entry.name,
        'timeout',
        `no answer from the feed service within ${timeoutMs} ms`,
        { retryable: true },
      )
    if (options.signal?.aborted)
      throw new UpstreamError(entry.name, 'network', 'the call was cancelled', { retryable: false })
    throw new UpstreamError(
      entry.name,
      'network',
      excerpt(`cannot reach the feed service: ${errorMessage(error)}`, scrub),
      { retryable: true },
    )
  }
}

/** `description` (the service's field) or `message`/`error` of an error body. */
function wordsOf(json: unknown): string | undefined {
  if (json === null || typeof json !== 'object') return undefined
  const record = json as Record<string, unknown>
  return [record.description, record.message, record.error].find(
    (value): value is string => typeof value === 'string' && value !== '',
  )
}

function parseEnvelope(
  entry: CatalogEntry,
  status: number,
  body: string,
  scrub: Scrubber,
  bounds: { maxDepth: number; maxNodes: number },
): Envelope {
  let json: unknown
  const { maxDepth, maxNodes } = bounds
  let deep: number | undefined
  try {
    deep = nestingBeyond(body, maxDepth, new NodeBudget(maxNodes, "the feed service's answer"))
  } catch (error) {
    if (!(error instanceof DecodeBudgetError)) throw error
    throw new UpstreamError(entry.name, 'bad-envelope', error.message, {
      httpStatus: status,
      retryable: false,
    })
  }
  if (deep !== undefined)
    throw new UpstreamError(
      entry.name,
      'bad-envelope',
      `the feed service sent JSON nested deeper than ${maxDepth} levels (JSON_MAX_DEPTH)`,
      { httpStatus: status, retryable: false },
    )
  try {
    json = JSON.parse(body)
  } catch {
    // A 5xx page or a cut-off body: both transient as far as we can tell.
    const what =
      status === 200
        ? 'a body that is not JSON (truncated?)'
        : `HTTP ${status} with a body that is not JSON`
    throw new UpstreamError(
      entry.name,
      status === 200 ? 'invalid-json' : 'upstream-error',
      `the feed service sent ${what}`,
      {
        httpStatus: status,
        retryable: status === 200 || isRetryableStatus(status),
      },
    )
  }
  const envelope = envelopeSchema.safeParse(json)
  if (!envelope.success && status !== 200) {
    // An error without the full envelope: keep whatever words it has.
    const words = wordsOf(json)
    throw new UpstreamError(
      entry.name,
      'upstream-error',
      words === undefined ? `the feed service answered HTTP ${status}` : excerpt(words, scrub),
      { httpStatus: status, retryable: isRetryableStatus(status) },
    )
  }
  if (!envelope.success) {
    const issue = envelope.error.issues[0]
    throw new UpstreamError(
      entry.name,
      'bad-envelope',
      excerpt(
        `the feed service answered without its envelope (${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'})`,
        scrub,
      ),
      {
        httpStatus: status,
        retryable: false,
      },
    )
  }
  return envelope.data
}

/**
 * Replaces every occurrence of the whole key, in any of its forms, in a (hostile or buggy) upstream
 * answer. Only whole forms: a part of a key can be a word of the answer too (a test key
 * `blockchain-http-test-key` took the field name `blockchain` with it); the service's free words,
 * which pass on, get the partial scrub in `excerpt`.
 */
function scrubDeep<T>(value: T, scrub: Scrubber): T {
  const text = JSON.stringify(value)
  const clean = scrub(text)
  return clean === text ? value : (JSON.parse(clean) as T)
}

/**
 * Calls one feed endpoint: validates the parameters, replaces `##signKey`/`##env:` in `key` at the
 * last moment, GETs with a timeout, checks the envelope and the `data` shape, normalises aliases.
 * Throws FeedParamsError (bad parameters, 400), SignKeyError (no usable key) or UpstreamError.
 */
export async function fetchFeed(
  endpoint: string,
  params: Readonly<Record<string, unknown>>,
  options: FetchFeedOptions,
): Promise<FeedResult> {
  const entry = findEndpoint(endpoint)
  if (!entry)
    throw new FeedParamsError(endpoint, [
      {
        param: 'endpoint',
        message: `is not a feed endpoint (got ${JSON.stringify(String(endpoint).slice(0, 64))})`,
      },
    ])
  const validated = parseParams(entry, params)
  const keyValue = typeof params.key === 'string' ? params.key : undefined
  const query = await substituteQuery(
    { ...validated, ...(keyValue !== undefined ? { key: keyValue } : {}) },
    {
      settings: options.settings,
      endpoint: entry.name,
      ...(options.requestId !== undefined ? { requestId: options.requestId } : {}),
      ...(options.env !== undefined ? { env: options.env } : {}),
    },
  )
  const whole = secretScrubber([query.key!])
  const partial = secretScrubber([query.key!], { partial: true })
  const url = feedUrl(
    options.baseUrl ?? familyBaseUrl(options.settings, entry.family),
    entry,
    query,
  )
  const safeUrl = whole(url.toString())

  const { status, body } = await get(entry, url, options, partial)
  const envelope = scrubDeep(
    parseEnvelope(entry, status, body, partial, {
      maxDepth: options.settings.JSON_MAX_DEPTH,
      maxNodes: options.settings.DECODE_MAX_NODES,
    }),
    whole,
  )
  if (status !== 200 || envelope.status !== 200 || envelope.result !== 'success') {
    const httpStatus = status !== 200 ? status : envelope.status
    // The service's own words, scrubbed and cut: they travel on to logs and to the adapter's answer.
    const description =
      excerpt(envelope.description, partial) ||
      `the feed service answered ${envelope.result} (${envelope.status})`
    throw new UpstreamError(entry.name, 'upstream-error', description, {
      httpStatus,
      retryable: isRetryableStatus(httpStatus),
    })
  }
  let data: Record<string, unknown>
  try {
    data = parseFeedData(entry, envelope.data)
  } catch (error) {
    if (error instanceof FeedDataError) {
      throw new UpstreamError(
        entry.name,
        'data-drift',
        `the feed service sent unexpected data: ${error.field} ${error.problem}`,
        {
          httpStatus: status,
          retryable: false,
          field: error.field,
        },
      )
    }
    throw error
  }
  return {
    endpoint: entry.name,
    params: validated,
    envelope: { ...envelope, data },
    data,
    url: safeUrl,
  }
}
