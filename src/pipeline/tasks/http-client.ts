import { request as undiciRequest, type Dispatcher } from 'undici'
import { errorKindOf, type ErrorKind } from '../../config/errors.ts'
import { declaredLength, readBounded, utf8Text } from '../../net/bounded-body.ts'
import { TaskError } from '../task.ts'
import {
  guardedDispatcher,
  RestrictedAddressError,
  trustedDispatcher,
  UnresolvableHostError,
  type HostAddresses,
  type HostResolver,
} from './address-guard.ts'
import { redactUrl, redirectTarget, type Hop } from './redirects.ts'

export { redactUrl }

/**
 * One HTTP exchange for the bridge and http tasks: redirects followed hop by hop (redirects.ts), the
 * body read under a byte cap while it streams, checked as UTF-8 text, errors classified (retryable
 * or not).
 * undici's `request` over keep-alive pools, rather than `fetch`: the bridge is called once per run,
 * and fetch's WHATWG streams, Request/Response objects and body written as a stream cost ~340 µs of
 * CPU per call on this machine against ~120 µs (a loopback call, client and server in one process).
 */
export interface ResponseCap {
  maxBytes: number
  /** Where the cap comes from, for the message: the setting, or the task's attribute. */
  source: string
}

export interface HttpExchange {
  method: Dispatcher.HttpMethod
  url: string
  body?: string
  headers: Record<string, string>
  signal: AbortSignal
  cap: ResponseCap
  /**
   * The private-address guard (address-guard.ts), with this resolver and this host's addresses (tests
   * inject them). `hops: 'every'` (the default) checks every connection: a URL from a variable.
   * `hops: 'redirects'` trusts the first URL (the operator wrote it) and checks every hop a redirect
   * leads to. Absent: nothing is checked (allowUnrestrictedNetworkAccess, a bridge the operator set).
   */
  guard?: { hops?: 'every' | 'redirects'; resolve?: HostResolver; hostAddresses?: HostAddresses }
}

export async function exchange(request: HttpExchange): Promise<{ status: number; text: string }> {
  const where = `${request.method} ${redactUrl(request.url)}`
  let hop: Hop = {
    method: request.method,
    url: request.url,
    body: request.body,
    headers: request.headers,
  }
  const visited = [URL.canParse(request.url) ? new URL(request.url).href : request.url]
  for (;;) {
    const redirected = visited.length > 1
    const guarded =
      request.guard !== undefined && (redirected || request.guard.hops !== 'redirects')
    let response: Dispatcher.ResponseData
    try {
      response = await undiciRequest(hop.url, {
        method: hop.method,
        headers: hop.headers,
        body: hop.body,
        signal: request.signal,
        dispatcher: guarded
          ? guardedDispatcher(request.guard?.resolve, request.guard?.hostAddresses)
          : trustedDispatcher,
      })
    } catch (error) {
      throw exchangeError(where, error, request.signal, redirected ? hop.url : undefined)
    }
    const next = redirectTarget(response.statusCode, response.headers.location, hop, visited, where)
    if (next === undefined) return readAnswer(where, response, request)
    discard(response.body)
    visited.push(next.url)
    hop = next
  }
}

/** The answer's body, under the cap, as UTF-8 text. */
async function readAnswer(
  where: string,
  response: Dispatcher.ResponseData,
  request: HttpExchange,
): Promise<{ status: number; text: string }> {
  const { statusCode, headers, body } = response
  const length = declaredLength(headers['content-length'])
  if (length !== undefined && length > request.cap.maxBytes) {
    discard(body)
    throw tooLarge(where, `announced ${length} bytes`, request.cap)
  }
  refuseBinary(where, headers['content-type'], body)
  let read
  try {
    read = await readBounded(body, request.cap.maxBytes)
  } catch (error) {
    throw exchangeError(where, error, request.signal)
  }
  if (!read.ok) throw tooLarge(where, `sent more than ${request.cap.maxBytes} bytes`, request.cap)
  const text = utf8Text(read.bytes)
  if (text === undefined)
    throw new TaskError(`${where} answered a body that is not UTF-8 text`, { kind: 'upstream' })
  return { status: statusCode, text }
}

/**
 * The failure of the exchange itself: the guard's refusals are final. `redirectedTo` is the URL a
 * redirect led to, when the failing hop was not the first. Exported for its test: undici's own
 * timeouts (10 s to connect, 300 s for headers) are out of a test's reach on loopback.
 */
export function exchangeError(
  where: string,
  error: unknown,
  signal: AbortSignal,
  redirectedTo?: string,
): TaskError {
  if (signal.aborted)
    return new TaskError(`${where} failed: timed out`, { kind: 'timeout', cause: error })
  const cause = (error as { cause?: unknown }).cause
  const guard = [error, cause].find(
    (item) => item instanceof RestrictedAddressError || item instanceof UnresolvableHostError,
  )
  const hop =
    redirectedTo === undefined ? '' : `${where} redirected to ${redactUrl(redirectedTo)}: `
  if (guard instanceof RestrictedAddressError)
    return new TaskError(
      `url: ${hop}${guard.message}; ${hop ? 'a redirect' : 'a URL from a variable'} may not reach it unless allowUnrestrictedNetworkAccess="true"`,
      { kind: 'bad_input', cause: guard },
    )
  if (guard instanceof UnresolvableHostError)
    return new TaskError(`url: ${hop}${guard.message}`, { kind: 'bad_input', cause: guard })
  const reason = (error as { code?: string }).code ?? (error as Error).message
  // No HTTP answer: the service is not there (or not in time); worth another try either way.
  const kind = errorKindOf(error) === 'timeout' ? 'timeout' : 'unavailable'
  return new TaskError(`${hop ? hop.slice(0, -2) + ' and ' : where + ' '}failed: ${reason}`, {
    kind,
    retryable: true,
    cause: error,
  })
}

function tooLarge(where: string, what: string, cap: ResponseCap): TaskError {
  return new TaskError(
    `${where} ${what}, over the cap of ${cap.maxBytes} bytes (${cap.source}); the connection was closed`,
    { kind: 'upstream', retryable: false, bound: cap.source },
  )
}

/**
 * A declared media or archive type (an image, a zip) is refused before its body is read: these tasks
 * hand text on. No content type, JSON, text, XML and octet-stream pass: a Chainlink node reads a body
 * whatever its type and leaves the parsing to jsonparse, and sources serve JSON as text/plain or as
 * application/octet-stream (a file download); its bytes must still be UTF-8.
 */
function refuseBinary(
  where: string,
  header: string | string[] | undefined,
  body: Dispatcher.ResponseData['body'],
): void {
  const type = (Array.isArray(header) ? header[0] : header)?.split(';')[0]?.trim().toLowerCase()
  if (
    !type ||
    /^text\/|[/+]json$|[/+]xml$|^(application|binary)\/(x-www-form-urlencoded|javascript|octet-stream)$/.test(
      type,
    )
  )
    return
  discard(body)
  throw new TaskError(`${where} answered content-type ${type.slice(0, 80)}, not JSON or text`, {
    kind: 'upstream',
  })
}

/** Drops an unread body (and its connection): destroying it unread errors it, which is expected here. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.once('error', () => undefined)
  body.destroy()
}

/** A retry helps with 5xx and 429, not with the caller's own mistakes. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408
}

/**
 * What an HTTP error status means: 503 is a service that is down for now (an adapter whose Redis is
 * gone), 504 and 408 a wait that ran out, 401 and 403 a refusal, 400 and 422 a request it cannot
 * use; any other is the service's own failure.
 */
export function statusKind(status: number): ErrorKind {
  if (status === 503) return 'unavailable'
  if (status === 504 || status === 408) return 'timeout'
  if (status === 401 || status === 403) return 'not_authorised'
  if (status === 400 || status === 422) return 'bad_input'
  return 'upstream'
}

/** The error an external adapter put in its body (`error.message`, `errorMessage`, `message`), if any. */
export function adapterErrorMessage(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as Record<string, unknown>
    const error = body.error as Record<string, unknown> | string | undefined
    if (typeof error === 'string') return error
    if (error && typeof error.message === 'string') return error.message
    if (typeof body.errorMessage === 'string') return body.errorMessage
    if (typeof body.message === 'string') return body.message
  } catch {
    return undefined
  }
  return undefined
}
