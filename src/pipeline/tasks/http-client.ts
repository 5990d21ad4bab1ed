import { TaskError } from '../task.ts'

/** One HTTP exchange for the bridge and http tasks: body as text, size-limited, errors classified. */
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024

export interface HttpExchange {
  method: string
  url: string
  body?: string
  headers: Record<string, string>
  signal: AbortSignal
  fetch: typeof fetch
  redirect?: 'follow' | 'error' | 'manual'
}

export async function exchange(request: HttpExchange): Promise<{ status: number; text: string }> {
  let response: Response
  try {
    response = await request.fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      redirect: request.redirect ?? 'follow',
    })
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    const reason = request.signal.aborted ? 'timed out' : (cause?.code ?? cause?.message ?? (error as Error).message)
    throw new TaskError(`${request.method} ${redactUrl(request.url)} failed: ${reason}`, true)
  }
  const length = Number(response.headers.get('content-length') ?? '0')
  if (length > MAX_RESPONSE_BYTES) throw new TaskError(`response of ${length} bytes is larger than ${MAX_RESPONSE_BYTES}`)
  const text = await response.text()
  if (text.length > MAX_RESPONSE_BYTES) throw new TaskError(`response larger than ${MAX_RESPONSE_BYTES} bytes`)
  return { status: response.status, text }
}

/** A retry helps with 5xx and 429, not with the caller's own mistakes. */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408
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
