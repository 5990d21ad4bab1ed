import type { Dispatcher } from 'undici'
import { TaskError } from '../task.ts'

/**
 * Redirects, followed here rather than by undici's interceptor, so that each hop chooses its own
 * connection (the private-address guard checks every hop a redirect leads to, whoever wrote the
 * first URL: address-guard.ts) and a loop is told as a loop. The rules are the Fetch standard's
 * (HTTP-redirect fetch): 301 and 302 turn a POST into a GET, 303 turns anything but HEAD into a GET,
 * both without the body; 307 and 308 keep method and body. Credentials (authorization, cookie,
 * proxy-authorization) do not follow a redirect to another origin.
 */
export const MAX_REDIRECTIONS = 20

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308])
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'cookie',
  'proxy-authorization',
])
const BODY_HEADERS: ReadonlySet<string> = new Set(['content-type', 'content-length'])

/** One request of an exchange: the first, or one a redirect led to. */
export interface Hop {
  method: Dispatcher.HttpMethod
  url: string
  body?: string
  headers: Record<string, string>
}

/**
 * The hop a redirect answer leads to, or undefined when the answer is not a redirect (it is the
 * answer). `visited` are the URLs of the hops so far; `where` names the exchange for messages.
 * A URL visited before is a loop, final; so is a redirect past MAX_REDIRECTIONS, or to a URL that
 * is not http or https.
 */
export function redirectTarget(
  status: number,
  location: string | string[] | undefined,
  hop: Hop,
  visited: readonly string[],
  where: string,
): Hop | undefined {
  const target = Array.isArray(location) ? location[0] : location
  if (!REDIRECT_STATUSES.has(status) || target === undefined) return undefined
  let next: URL
  try {
    next = new URL(target, hop.url)
  } catch {
    throw sourceFault(`${where} redirected to ${JSON.stringify(target.slice(0, 80))}, not a URL`)
  }
  if (next.protocol !== 'http:' && next.protocol !== 'https:')
    throw sourceFault(
      `${where} redirected to a ${next.protocol} URL; only http and https are followed`,
    )
  next.hash = ''
  if (visited.includes(next.href))
    throw sourceFault(
      `${where} redirected in a loop: ${[...visited, next.href].map(redactUrl).join(' -> ')}`,
    )
  if (visited.length > MAX_REDIRECTIONS)
    throw sourceFault(`${where} redirected more than ${MAX_REDIRECTIONS} times`)
  const asGet =
    status === 303
      ? hop.method !== 'HEAD'
      : (status === 301 || status === 302) && hop.method === 'POST'
  const crossOrigin = next.origin !== new URL(hop.url).origin
  const headers = Object.fromEntries(
    Object.entries(hop.headers).filter(
      ([name]) =>
        !(crossOrigin && CREDENTIAL_HEADERS.has(name.toLowerCase())) &&
        !(asGet && BODY_HEADERS.has(name.toLowerCase())),
    ),
  )
  return asGet
    ? { method: 'GET', url: next.href, headers }
    : { method: hop.method, url: next.href, body: hop.body, headers }
}

/** A source that redirects where it should not: its fault, the same every time, not retried. */
function sourceFault(message: string): TaskError {
  return new TaskError(message, { kind: 'upstream', retryable: false })
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
