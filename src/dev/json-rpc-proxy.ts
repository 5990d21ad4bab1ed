/**
 * A JSON-RPC proxy in front of one node (anvil), on a loopback port of its own, serving HTTP (POST,
 * a call or a batch) and WebSocket on the same port as a node does: a process given `ws://proxy`
 * reads over `http://proxy` and subscribes over `ws://proxy`, and the proxy sees both. What it does
 * with what passes is its caller's: the counting proxy of the bench (rpc-call-counter.ts) counts the
 * calls, a test's tap records them and can change the answers.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { WebSocket, WebSocketServer, type RawData } from 'ws'
import { freePort } from './ports.ts'

export type Transport = 'http' | 'ws'

export interface JsonRpcProxyHooks {
  /** A client's message to the node (one call or a batch), before it is passed on. */
  onRequest?(body: string, transport: Transport): void
  /** The node's HTTP answer to `request` as the client gets it (unchanged by default). */
  answer?(request: string, answer: string): string
  /** A message the node pushed over WebSocket (answers, notifications) as the client gets it. */
  pushed?(message: string): string
}

export interface JsonRpcProxy {
  readonly httpUrl: string
  readonly wsUrl: string
  stop(): Promise<void>
}

/** Starts a proxy to `target` (anvil's http and ws URLs). */
export async function startJsonRpcProxy(
  target: { rpcUrl: string; wsUrl: string },
  hooks: JsonRpcProxyHooks = {},
): Promise<JsonRpcProxy> {
  const server: Server = createServer((request, response) => {
    void readBody(request).then(async (body) => {
      hooks.onRequest?.(body, 'http')
      try {
        const answer = await fetch(target.rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
        const text = await answer.text()
        response.writeHead(answer.status, { 'content-type': 'application/json' })
        response.end(hooks.answer ? hooks.answer(body, text) : text)
      } catch (error) {
        response.writeHead(502).end(String(error))
      }
    })
  })
  const sockets = new WebSocketServer({ server })
  const upstreams = new Set<WebSocket>()
  sockets.on('connection', (client) => bridge(client, new WebSocket(target.wsUrl)))

  function bridge(client: WebSocket, upstream: WebSocket): void {
    upstreams.add(upstream)
    const waiting: string[] = []
    upstream.on('open', () => {
      for (const message of waiting.splice(0)) upstream.send(message)
    })
    upstream.on('message', (data: RawData) => {
      const message = hooks.pushed ? hooks.pushed(data.toString()) : data.toString()
      if (client.readyState === WebSocket.OPEN) client.send(message)
    })
    client.on('message', (data: RawData) => {
      hooks.onRequest?.(data.toString(), 'ws')
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data.toString())
      else waiting.push(data.toString())
    })
    const closeBoth = () => {
      upstreams.delete(upstream)
      client.close()
      upstream.close()
    }
    for (const socket of [client, upstream]) {
      socket.on('close', closeBoth)
      socket.on('error', closeBoth)
    }
  }

  const port = await freePort()
  await new Promise<void>((resolveListen) => server.listen(port, '127.0.0.1', resolveListen))
  return {
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    async stop() {
      for (const upstream of upstreams) upstream.terminate()
      for (const client of sockets.clients) client.terminate()
      sockets.close()
      server.closeAllConnections()
      await new Promise<void>((resolveClose) => server.close(() => resolveClose()))
    },
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
