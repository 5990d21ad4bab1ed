import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startAdapter, type RunningAdapter } from '../../src/adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../../src/adapter/workers.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings, type Settings } from '../../src/config/settings.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

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

/**
 * Settings for an adapter and fetch workers on the test Redis, under a queue prefix of their own, for
 * a sports feed at `feedUrl`; `extra` adds or overrides.
 */
export function adapterSettings(
  label: string,
  feedUrl: string,
  extra: Record<string, string>,
): Settings {
  return parseSettings({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: uniquePrefix(label).replace(/:/g, '.'),
    SPORTS_URL: feedUrl,
    LOG_LEVEL: 'silent',
    ...extra,
  })
}

export interface AdapterWithWorkers {
  adapter: RunningAdapter
  workers: RunningFetchWorkers
  /** Closes both and deletes their keys from the Redis. */
  close(): Promise<void>
}

/** An adapter and its fetch workers in this process; their JSON log lines go to `logLines` when given. */
export async function startAdapterWithWorkers(
  settings: Settings,
  logLines?: string[],
): Promise<AdapterWithWorkers> {
  const logger = logLines
    ? createLogger(settings, 'adapter', { write: (line: string) => void logLines.push(line) })
    : undefined
  const adapter = await startAdapter({
    settings,
    ...(logger ? { logger } : {}),
    framework: { EA_PORT: 0, METRICS_ENABLED: false },
  })
  const workers = await startFetchWorkers({ settings, ...(logger ? { logger } : {}) })
  return {
    adapter,
    workers,
    async close() {
      await adapter.close()
      await workers.close()
      await deleteKeys(settings.REDIS_URL, `${settings.QUEUE_PREFIX}:*`)
    },
  }
}
