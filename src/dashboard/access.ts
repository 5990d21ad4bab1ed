import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { FeedrunnerError } from '../config/errors.ts'
import type { Settings } from '../config/settings.ts'
import { isLoopbackHost } from '../net/listen-address.ts'

export { isLoopbackHost }

/** Who may open the dashboard: anyone who reaches it (loopback only), or who shows DASHBOARD_TOKEN. */
export type DashboardAccess = { kind: 'loopback' } | { kind: 'token'; digest: Buffer }

/**
 * How the dashboard is guarded on a server that listens on `bindHost`. It shows every run (requesters,
 * values, errors) and, with DASHBOARD_READ_ONLY=false, retries and removes jobs: off loopback it is
 * served only behind DASHBOARD_TOKEN, and the start stops when none is set.
 */
export function dashboardAccess(
  settings: Pick<Settings, 'DASHBOARD_TOKEN'>,
  bindHost: string,
): DashboardAccess {
  const token = settings.DASHBOARD_TOKEN
  if (token !== undefined) return { kind: 'token', digest: digestOf(token) }
  if (isLoopbackHost(bindHost)) return { kind: 'loopback' }
  throw new FeedrunnerError(
    `DASHBOARD_ENABLED=true while the adapter listens on EA_HOST=${bindHost === '::' || bindHost === '0.0.0.0' ? `${bindHost} (every interface)` : bindHost}, and DASHBOARD_TOKEN is not set: ` +
      'set DASHBOARD_TOKEN to a random secret (for example `openssl rand -hex 32`), or EA_HOST=127.0.0.1, or DASHBOARD_ENABLED=false',
    { kind: 'config' },
  )
}

/** Whether a request shows the token: HTTP Basic (any user name, the token as password) or Bearer. */
export function showsToken(authorization: string | undefined, digest: Buffer): boolean {
  const presented = presentedSecret(authorization)
  // Compared as digests of equal length, in constant time: the time taken tells nothing of the token.
  return presented !== undefined && timingSafeEqual(digestOf(presented), digest)
}

/** Answers 401 in the adapter's JSON error shape unless the request shows the token. */
export async function requireToken(
  request: FastifyRequest,
  reply: FastifyReply,
  digest: Buffer,
): Promise<void> {
  if (showsToken(request.headers.authorization, digest)) return
  const statusCode = 401
  await reply
    .code(statusCode)
    // A browser asks for the password once and sends it with every page, asset and API call after.
    .header('www-authenticate', 'Basic realm="feedrunner dashboard", charset="UTF-8"')
    .type('application/json; charset=utf-8')
    .send({
      status: 'errored',
      statusCode,
      error: {
        name: 'DashboardUnauthorised',
        message:
          'the dashboard needs DASHBOARD_TOKEN: give it as the password of HTTP Basic (any user name) or as `Authorization: Bearer <token>`',
      },
    })
}

function presentedSecret(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined
  const [scheme, value] = authorization.trim().split(/\s+/, 2)
  if (value === undefined) return undefined
  if (scheme?.toLowerCase() === 'bearer') return value
  if (scheme?.toLowerCase() !== 'basic') return undefined
  const decoded = Buffer.from(value, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon < 0 ? undefined : decoded.slice(colon + 1)
}

function digestOf(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest()
}
