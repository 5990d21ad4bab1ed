import { createServer, type IncomingMessage, type Server } from 'node:http'
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientIdentity, trustedProxies } from '../../src/adapter/client-identity.ts'
import type { Settings } from '../../src/config/settings.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { createFetchQueue } from '../../src/queue/factories.ts'
import { testRedisUrl } from '../support/redis.ts'
import {
  adapterSettings,
  oddsEnvelope,
  sendJson,
  startAdapterWithWorkers,
  startEmulatedFeed,
  type AdapterWithWorkers,
  type EmulatedFeed,
} from './support.ts'

/**
 * Fair shares behind a reverse proxy. Every address is loopback: the proxy reaches the adapter from
 * 127.0.0.3, its two clients (a flooder and another one) reach the proxy from 127.0.0.4 and
 * 127.0.0.5, and it appends each client's address to X-Forwarded-For as a proxy does. The proof is an
 * order, not a time, as in fairness.test.ts: how many of the flood's fetches the feed service served
 * between the other client's request and its fetch.
 */
const FLOOD = 60
const CONCURRENCY = 4
const PROXY = '127.0.0.3'
const game = { endpoint: 'game-odds', region: 'england', sport: 'soccer', league: 'epl' }

interface Proxy {
  url: string
  close(): Promise<void>
}

/** A reverse proxy to `target` that appends the caller's address to X-Forwarded-For. */
async function startProxy(target: string): Promise<Proxy> {
  const outbound = new Agent({ localAddress: PROXY, connections: FLOOD + 20 })
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', () => {
      const forwarded = [incoming.headers['x-forwarded-for'], incoming.socket.remoteAddress]
        .filter(Boolean)
        .join(', ')
      request(target, {
        method: 'POST',
        dispatcher: outbound,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': forwarded },
        body: Buffer.concat(chunks),
      })
        .then(async (answer) => {
          const body = Buffer.from(await answer.body.arrayBuffer())
          outgoing.writeHead(answer.statusCode, { 'content-type': 'application/json' })
          outgoing.end(body)
        })
        .catch(() => {
          outgoing.writeHead(502)
          outgoing.end()
        })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, PROXY, resolve))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://${PROXY}:${port}/`,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await outbound.close()
    },
  }
}

describe('who a request comes from, over HTTP', () => {
  let server: Server
  let url: string
  const trusted = trustedProxies(['127.0.0.3', '10.0.0.0/8', 'fd00::/8'])
  const identify = clientIdentity(trusted)
  const untrusting = clientIdentity(undefined)

  beforeAll(async () => {
    server = createServer((incoming: IncomingMessage, outgoing) => {
      outgoing.end(
        JSON.stringify({ trusted: identify(incoming), untrusting: untrusting(incoming) }),
      )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
  })

  async function who(from: string, forwarded?: string): Promise<Record<string, string>> {
    const agent = new Agent({ localAddress: from })
    try {
      const answer = await request(url, {
        dispatcher: agent,
        headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
      })
      return (await answer.body.json()) as Record<string, string>
    } finally {
      await agent.close()
    }
  }

  it('takes the forwarded address only from a trusted proxy', async () => {
    expect(await who('127.0.0.3', '198.51.100.7')).toEqual({
      trusted: '198.51.100.7',
      untrusting: '127.0.0.3',
    })
    // The same header from an address nobody named is the caller's own words.
    expect(await who('127.0.0.6', '198.51.100.7')).toEqual({
      trusted: '127.0.0.6',
      untrusting: '127.0.0.6',
    })
  })

  it('reads from the right, past trusted proxies, and stops at what no proxy wrote', async () => {
    // A caller's forged first entry is left of what the proxies appended.
    expect((await who('127.0.0.3', '203.0.113.9, 198.51.100.7, 10.1.2.3')).trusted).toBe(
      '198.51.100.7',
    )
    expect((await who('127.0.0.3', '[2001:db8::5]:443, fd00::1')).trusted).toBe('2001:db8::5')
    expect((await who('127.0.0.3', '198.51.100.7:5555')).trusted).toBe('198.51.100.7')
    // Nothing but proxies, or something that is no address: the proxy itself is the client.
    expect((await who('127.0.0.3', '10.0.0.1, 10.0.0.2')).trusted).toBe('127.0.0.3')
    expect((await who('127.0.0.3', '198.51.100.7, unknown')).trusted).toBe('127.0.0.3')
    expect((await who('127.0.0.3')).trusted).toBe('127.0.0.3')
  })
})

describe('a flood and another client behind one proxy, for real', () => {
  let feed: EmulatedFeed
  const started: { parts: AdapterWithWorkers; proxy: Proxy; settings: Settings }[] = []
  const agents: Agent[] = []

  beforeAll(async () => {
    // Every answer takes 10 ms; the family's rate limit (5 a second) keeps a flood queued for 12 s.
    feed = await startEmulatedFeed((query, response) => {
      setTimeout(
        () => sendJson(response, 200, oddsEnvelope(query, { home: 1.6, draw: 4.2, away: 5.25 })),
        10,
      )
    })
  })
  afterAll(async () => {
    for (const { parts, proxy } of started) {
      await proxy.close()
      await parts.close()
    }
    for (const agent of agents) await agent.close()
    await feed?.close()
  })

  async function start(label: string, extra: Record<string, string>) {
    const settings = adapterSettings(label, feed.url, {
      FEED_API_KEY: 'fairness-proxy-key-5e6f7a',
      FETCH_WORKER_CONCURRENCY: String(CONCURRENCY),
      RATE_LIMIT_SPORTS_PER_SECOND: '5',
      ADAPTER_TIMEOUT_MS: '60000',
      ...extra,
    })
    const parts = await startAdapterWithWorkers(settings)
    const proxy = await startProxy(parts.adapter.url)
    started.push({ parts, proxy, settings })
    return { settings, adapterUrl: parts.adapter.url, proxyUrl: proxy.url }
  }

  function client(address: string): Agent {
    const agent = new Agent({ localAddress: address, connections: FLOOD + 10 })
    agents.push(agent)
    return agent
  }

  async function post(
    url: string,
    from: Agent,
    homeTeam: string,
    headers: Record<string, string> = {},
  ): Promise<number> {
    const answer = await request(url, {
      method: 'POST',
      dispatcher: from,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ id: '1', data: { ...game, date: '2024-08-16', homeTeam } }),
    })
    await answer.body.text()
    return answer.statusCode
  }

  function served(homeTeam: string): number {
    return feed.requests.findIndex((query) => query.get('homeTeam') === homeTeam)
  }

  /** Waits until all `count` fetches are queued and the feed is busy with them (a bound for a hang only). */
  async function floodQueued(settings: Settings, count: number): Promise<void> {
    const connection = createRedisConnection(testRedisUrl(), 'client')
    const queue = createFetchQueue(settings, 'sports', connection)
    const firstServed = feed.requests.length
    try {
      for (let waited = 0; ; waited += 20) {
        const counts = await queue.getJobCounts('prioritized', 'wait', 'active', 'completed')
        const queued = Object.values(counts).reduce((sum, value) => sum + value, 0)
        if (queued >= count && feed.requests.length - firstServed >= 10) return
        if (waited > 60_000) throw new Error(`only ${queued} of ${count} fetches were queued`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } finally {
      await queue.close()
      connection.disconnect()
    }
  }

  /**
   * Floods from `flood`, then sends one request from `other` once the flood is queued; how many of
   * the flood's fetches were served between that request and its own fetch, and how many were left.
   */
  async function orderOf(
    label: string,
    settings: Settings,
    flood: (index: number) => Promise<number>,
    other: (team: string) => Promise<number>,
  ): Promise<{ ahead: number; left: number }> {
    expect(await other(`${label} warm`)).toBe(200)
    const floodFirst = feed.requests.length
    const answers = Array.from({ length: FLOOD }, (_, index) => flood(index))
    await floodQueued(settings, FLOOD + 1)
    const before = feed.requests.length
    expect(await other(`${label} other`)).toBe(200)
    expect((await Promise.all(answers)).every((status) => status === 200)).toBe(true)
    // The flood still queued when the other request came must leave room to tell the cases apart.
    expect(FLOOD - (before - floodFirst)).toBeGreaterThan(4 * (2 * CONCURRENCY + 2))
    return { ahead: served(`${label} other`) - before, left: FLOOD - (before - floodFirst) }
  }

  it('tells two clients of a trusted proxy apart, and not of a proxy nobody named', async () => {
    const flooder = client('127.0.0.4')
    const other = client('127.0.0.5')
    const trusted = await start('fair-proxy-trusted', { ADAPTER_TRUSTED_PROXIES: PROXY })
    const apart = await orderOf(
      'trusted',
      trusted.settings,
      (index) => post(trusted.proxyUrl, flooder, `trusted flood ${index}`),
      (team) => post(trusted.proxyUrl, other, team),
    )
    const untrusted = await start('fair-proxy-untrusted', {})
    const together = await orderOf(
      'untrusted',
      untrusted.settings,
      (index) => post(untrusted.proxyUrl, flooder, `untrusted flood ${index}`),
      (team) => post(untrusted.proxyUrl, other, team),
    )
    console.log(
      `[fairness behind a proxy] trusted: ${apart.ahead} of the flood's fetches before the other client's (${apart.left} left); not trusted: ${together.ahead} (${together.left} left)`,
    )
    // Told apart: only what the workers had already taken of the flood went first.
    expect(apart.ahead).toBeLessThanOrEqual(2 * CONCURRENCY + 2)
    // One client: the other request queued behind most of the flood.
    expect(together.ahead).toBeGreaterThan(together.left / 2)
  }, 180_000)

  it('ignores X-Forwarded-For from an address that is not a trusted proxy', async () => {
    const forger = client('127.0.0.6')
    const other = client('127.0.0.7')
    const adapter = await start('fair-proxy-forged', { ADAPTER_TRUSTED_PROXIES: PROXY })
    // Each request of the flood claims another address: were it believed, each would be a new
    // client, first in line, and the other client's request would wait behind all of them.
    const order = await orderOf(
      'forged',
      adapter.settings,
      (index) =>
        post(adapter.adapterUrl, forger, `forged flood ${index}`, {
          'x-forwarded-for': `198.51.100.${index % 250}, 203.0.113.${index % 250}`,
        }),
      (team) => post(adapter.adapterUrl, other, team),
    )
    console.log(
      `[fairness, forged X-Forwarded-For] ${order.ahead} of the flood's fetches before the other client's (${order.left} left)`,
    )
    expect(order.ahead).toBeLessThanOrEqual(2 * CONCURRENCY + 2)
  }, 180_000)
})
