import { createServer, request as httpRequest, type IncomingMessage } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { rpc } from './rpc.ts'

/** A raw transaction as a runner sent it, when the proxy saw it, and the chain's head then. */
export interface Broadcast {
  at: number
  raw: string
  /** Read from the node before the call is forwarded; undefined if it did not answer. */
  head?: number
}

/**
 * The runners' only way to the chain: an HTTP JSON-RPC proxy on loopback in front of anvil. It keeps
 * every `eth_sendRawTransaction` that passes (single or in a batch), before forwarding, so what was
 * signed is known even when the node never answers, with the node's head read just before (the
 * sender simulates a transaction just before it signs it, so that head is at or after the one its
 * simulation saw); and it can cut the link (every connection reset, new ones refused), slow it
 * (each call held back before it is forwarded), or hold the broadcasts alone until restored (a
 * node that takes a sender's batch and does not answer yet, while its reads still answer).
 */
export interface RpcProxy {
  readonly url: string
  readonly broadcasts: readonly Broadcast[]
  cut(): void
  slow(delayMs: number): void
  holdBroadcasts(): void
  /** Ends a cut, a slowdown or a hold (what was held goes on to the node). */
  restore(): void
  close(): Promise<void>
}

/** A body larger than this is not looked into (no runner sends one); it is forwarded all the same. */
const INSPECTED_BODY_BYTES = 8 * 1024 * 1024

export async function startRpcProxy(targetUrl: string): Promise<RpcProxy> {
  const target = new URL(targetUrl)
  const broadcasts: Broadcast[] = []
  const sockets = new Set<Socket>()
  let cut = false
  let delayMs = 0
  let hold: { released: Promise<void>; release: () => void } | undefined

  const server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request)
      const seen = collectBroadcasts(body, broadcasts)
      if (seen.length > 0) {
        const head = await headOf(targetUrl)
        if (head !== undefined) for (const broadcast of seen) broadcast.head = head
      }
      if (delayMs > 0) await delay(delayMs)
      if (seen.length > 0 && hold) await hold.released
      if (cut) return request.socket.destroy()
      const upstream = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, {
            'content-type': answer.headers['content-type'] ?? 'application/json',
          })
          answer.pipe(response)
        },
      )
      upstream.on('error', () => request.socket.destroy())
      upstream.end(body)
    })().catch(() => request.socket.destroy())
  })
  server.on('connection', (socket) => {
    if (cut) return socket.resetAndDestroy()
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    broadcasts,
    cut() {
      cut = true
      for (const socket of sockets) socket.resetAndDestroy()
      sockets.clear()
    },
    slow(ms: number) {
      delayMs = ms
    },
    holdBroadcasts() {
      if (hold) return
      let release = () => {}
      const released = new Promise<void>((resolve) => (release = resolve))
      hold = { released, release }
    },
    restore() {
      cut = false
      delayMs = 0
      hold?.release()
      hold = undefined
    },
    close() {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks)))
    request.on('error', reject)
  })
}

/** Keeps the raw transactions of every eth_sendRawTransaction call in a JSON-RPC body; answers them. */
export function collectBroadcasts(body: Buffer, into: Broadcast[]): Broadcast[] {
  if (body.length > INSPECTED_BODY_BYTES || !body.includes('eth_sendRawTransaction')) return []
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    return []
  }
  const at = Date.now()
  const seen: Broadcast[] = []
  for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
    const { method, params } = (call ?? {}) as { method?: unknown; params?: unknown }
    if (method !== 'eth_sendRawTransaction' || !Array.isArray(params)) continue
    if (typeof params[0] === 'string') seen.push({ at, raw: params[0] })
  }
  into.push(...seen)
  return seen
}

/** The node's head block number; undefined when it does not answer one. */
async function headOf(targetUrl: string): Promise<number | undefined> {
  try {
    const head = Number(await rpc<string>(targetUrl, 'eth_blockNumber'))
    return Number.isSafeInteger(head) ? head : undefined
  } catch {
    return undefined
  }
}
