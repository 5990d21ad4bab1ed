import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface AdapterAnswer {
  status: number
  body: Record<string, unknown>
  text: string
}

/** POSTs one adapter request the way a Chainlink bridge does. */
export async function postAdapter(
  url: string,
  data: Record<string, unknown>,
  id = '1',
): Promise<AdapterAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id, data }),
  })
  const text = await response.text()
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(text) as Record<string, unknown>
  } catch {
    body = { raw: text }
  }
  return { status: response.status, body, text }
}

export interface EmulatedFeed {
  url: string
  /** Requests received, with their query (key included: the emulated service checks it). */
  readonly requests: URLSearchParams[]
  close(): Promise<void>
}

/**
 * A stand-in for a misbehaving remote feed service (500s, silence, refusals): only the remote
 * service is emulated; everything on our side is real.
 */
export async function startEmulatedFeed(
  handle: (query: URLSearchParams, response: ServerResponse, count: number) => void,
): Promise<EmulatedFeed> {
  const requests: URLSearchParams[] = []
  const sockets = new Set<import('node:net').Socket>()
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const query = new URL(request.url ?? '/', 'http://feed').searchParams
    requests.push(query)
    handle(query, response, requests.length)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A game-odds envelope in the service's format, echoing the query without its key. */
export function oddsEnvelope(
  query: URLSearchParams,
  odds: { home: number; draw: number; away: number },
): string {
  const echoed = Object.fromEntries([...query].filter(([name]) => name !== 'key'))
  const now = Date.now()
  return JSON.stringify({
    status: 200,
    result: 'success',
    description: `Game odds for ${echoed.homeTeam ?? 'a game'}`,
    query: echoed,
    provider: { name: 'emulated', subscription: true, institutionGrade: true },
    data: {
      startTime: 1723766400000,
      status: 3,
      awayTeamName: 'Away',
      homeTeamName: String(echoed.homeTeam),
      homeTeamScore: 1,
      awayTeamScore: 0,
      homeMoneyLine: odds.home,
      awayMoneyLine: odds.away,
      drawMoneyLine: odds.draw,
    },
    time: new Date(now).toUTCString(),
    timestamp: now,
    lastUpdated: now,
  })
}

export function errorEnvelope(status: number, description: string): string {
  const now = Date.now()
  return JSON.stringify({
    status,
    result: 'error',
    description,
    time: new Date(now).toUTCString(),
    timestamp: now,
  })
}

export function sendJson(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'application/json' })
  response.end(body)
}

/** Deletes this test's own keys (its unique prefix) from the shared Redis. */
export async function deleteKeys(redisUrl: string, pattern: string): Promise<void> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(redisUrl)
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      if (keys.length > 0) await redis.del(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}
