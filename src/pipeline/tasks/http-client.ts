import { Agent, interceptors, request as undiciRequest, type Dispatcher } from 'undici'
import { errorKindOf, type ErrorKind } from '../../config/errors.ts'
import { TaskError } from '../task.ts'

/** One HTTP exchange for the bridge and http tasks: body as text, size-limited, errors classified. */
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024
const MAX_REDIRECTIONS = 20

/**
 * undici's `request` over one keep-alive pool per origin, rather than `fetch`: the bridge is called
 * once per run, and fetch's WHATWG streams, Request/Response objects and body written as a stream cost
 * ~340 µs of CPU per call on this machine against ~120 µs (a loopback call, client and server in one process).
 * undici's own idle timeout (4 s, shorter if the server says so): an idle connection the server has
 * closed meanwhile is not reused for a POST, which undici does not retry.
 */
const direct: Dispatcher = new Agent()
const following: Dispatcher = direct.compose(
  interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }),
)

export interface HttpExchange {
  method: Dispatcher.HttpMethod
  url: string
  body?: string
  headers: Record<string, string>
  signal: AbortSignal
  /** `error` refuses a redirect (a URL from a variable may not bounce inward); `follow` by default. */
  redirect?: 'follow' | 'error'
}

export async function exchange(request: HttpExchange): Promise<{ status: number; text: string }> {
  let response: Dispatcher.ResponseData
  try {
    response = await undiciRequest(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      dispatcher: request.redirect === 'error' ? direct : following,
    })
  } catch (error) {
    const reason = request.signal.aborted
      ? 'timed out'
      : ((error as { code?: string }).code ?? (error as Error).message)
    // No HTTP answer: the service is not there (or not in time); worth another try either way.
    const kind =
      request.signal.aborted || errorKindOf(error) === 'timeout' ? 'timeout' : 'unavailable'
    throw new TaskError(`${request.method} ${redactUrl(request.url)} failed: ${reason}`, {
      kind,
      retryable: true,
      cause: error,
    })
  }
  const { statusCode, headers, body } = response
  if (
    request.redirect === 'error' &&
    statusCode >= 300 &&
    statusCode < 400 &&
    headers.location !== undefined
  ) {
    discard(body)
    throw new TaskError(
      `${request.method} ${redactUrl(request.url)} answered a redirect (${statusCode}), which a URL from a variable may not follow`,
    )
  }
  const length = Number(headers['content-length'] ?? '0')
  if (length > MAX_RESPONSE_BYTES) {
    discard(body)
    throw new TaskError(`response of ${length} bytes is larger than ${MAX_RESPONSE_BYTES}`)
  }
  const text = await body.text()
  if (text.length > MAX_RESPONSE_BYTES)
    throw new TaskError(`response larger than ${MAX_RESPONSE_BYTES} bytes`)
  return { status: statusCode, text }
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

/** URLs may carry credentials in their query; only scheme, host and path go into messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
  } catch {
    return '(invalid URL)'
  }
}
