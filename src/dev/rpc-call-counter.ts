/**
 * A counting JSON-RPC proxy in front of one node (anvil), on a loopback port of its own: what a
 * process sent to its RPC node, by method, the bill an operator pays a provider for (the bench's
 * block-time phase, bench/runner/phases/blocktime.ts, and the tests of the shared head read). It serves HTTP (POST, a call or
 * a batch, each call counted) and WebSocket on the same port, as a node does, so a runner given
 * `ws://proxy` reads over `http://proxy` and subscribes over `ws://proxy`, and both are counted.
 * Subscription notifications the node pushes are counted apart (`notifications`): providers bill them
 * differently, and they are not calls.
 *
 * anvil's own log (BENCH_RPC_CALLS=1) counts every caller of the chain, the bench's too; this counts
 * only the processes pointed at the proxy.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { WebSocket, WebSocketServer, type RawData } from 'ws'
import { freePort } from './ports.ts'

export interface RpcCounts {
  /** Calls by method (HTTP and WebSocket together). */
  calls: Record<string, number>
  /** Calls by transport. */
  byTransport: { http: number; ws: number }
  /** Calls made over WebSocket, by method. */
  wsCalls: Record<string, number>
  /** Subscription notifications the node pushed over WebSocket. */
  notifications: number
}

export interface RpcProxy {
  readonly httpUrl: string
  readonly wsUrl: string
  /** The counts since the proxy started (a copy). */
  snapshot(): RpcCounts
  stop(): Promise<void>
}

/** Starts a proxy to `target` (anvil's http URL; its ws URL is the same host and port). */
export async function startRpcProxy(target: { rpcUrl: string; wsUrl: string }): Promise<RpcProxy> {
  const counts: RpcCounts = {
    calls: {},
    byTransport: { http: 0, ws: 0 },
    wsCalls: {},
    notifications: 0,
  }
  const count = (body: string, transport: 'http' | 'ws') => {
    for (const method of methodsOf(body)) {
      counts.calls[method] = (counts.calls[method] ?? 0) + 1
      counts.byTransport[transport] += 1
      if (transport === 'ws') counts.wsCalls[method] = (counts.wsCalls[method] ?? 0) + 1
    }
  }
  const server: Server = createServer((request, response) => {
    void readBody(request).then(async (body) => {
      count(body, 'http')
      try {
        const answer = await fetch(target.rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
        response.writeHead(answer.status, { 'content-type': 'application/json' })
        response.end(await answer.text())
      } catch (error) {
        response.writeHead(502).end(String(error))
      }
    })
  })
  const sockets = new WebSocketServer({ server })
  const upstreams = new Set<WebSocket>()
  sockets.on('connection', (client) => {
    const upstream = new WebSocket(target.wsUrl)
    upstreams.add(upstream)
    const waiting: RawData[] = []
    upstream.on('open', () => {
      for (const message of waiting.splice(0)) upstream.send(message.toString())
    })
    upstream.on('message', (data: RawData) => {
      if (/"method"\s*:\s*"eth_subscription"/.test(data.toString())) counts.notifications += 1
      if (client.readyState === WebSocket.OPEN) client.send(data.toString())
    })
    client.on('message', (data: RawData) => {
      count(data.toString(), 'ws')
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data.toString())
      else waiting.push(data)
    })
    const closeBoth = () => {
      upstreams.delete(upstream)
      client.close()
      upstream.close()
    }
    client.on('close', closeBoth)
    upstream.on('close', closeBoth)
    client.on('error', closeBoth)
    upstream.on('error', closeBoth)
  })
  const port = await freePort()
  await new Promise<void>((resolveListen) => server.listen(port, '127.0.0.1', resolveListen))
  return {
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    snapshot: () => ({
      calls: { ...counts.calls },
      byTransport: { ...counts.byTransport },
      wsCalls: { ...counts.wsCalls },
      notifications: counts.notifications,
    }),
    async stop() {
      for (const upstream of upstreams) upstream.terminate()
      for (const client of sockets.clients) client.terminate()
      sockets.close()
      server.closeAllConnections()
      await new Promise<void>((resolveClose) => server.close(() => resolveClose()))
    },
  }
}

/** The methods of a JSON-RPC message: one call, or each call of a batch. */
function methodsOf(body: string): string[] {
  try {
    const parsed = JSON.parse(body) as unknown
    const calls = Array.isArray(parsed) ? parsed : [parsed]
    return calls.map((call) => String((call as { method?: unknown }).method ?? 'unknown'))
  } catch {
    return ['unparsable']
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolveBody(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

/** `after - before`, by method, calls only (largest first). */
export function callsBetween(before: RpcCounts, after: RpcCounts): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after.calls)
      .map(([method, calls]): [string, number] => [method, calls - (before.calls[method] ?? 0)])
      .filter(([, calls]) => calls > 0)
      .sort((a, b) => b[1] - a[1]),
  )
}
