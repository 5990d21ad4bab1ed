import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { jsonWideBomb } from './decode-bombs.ts'

/**
 * A source that answers what a hostile one would, on 127.0.0.1, for the hostile-source tests.
 * Paths: /endless (chunked, never ends), /chunked-200mb (200 MB chunked, no content-length),
 * /drip (one byte a second), /deep (16,000 levels of nested arrays, under the http task's 32 KiB cap), /big-number (a number of 10^6 digits),
 * /bad-utf8, /binary (content-type image/png), /loop (redirects to itself), /ok?value=N (a fair answer),
 * /wide?bytes=N (JSON of N bytes, 3 MiB by default, that builds a value every 3: `[[],[],...]`).
 * `sent` counts the body bytes written per path, so a test can tell that the reader hung up early.
 */
export interface HostileSource {
  url: string
  port: number
  sent: Map<string, number>
  hits: Map<string, number>
  close(): Promise<void>
}

const CHUNK = Buffer.alloc(64 * 1024, 0x31)

/**
 * A public address (Cloudflare's resolver) in no special-purpose range, serving no HTTP on a test's
 * port: the "public" answer of a rebinding resolver. A connection there hangs, is refused or finds no
 * route, each worth a retry; documentation ranges can no longer stand for it, the guard refuses them.
 */
export const PUBLIC_UNSERVED_V6 = '2606:4700:4700::1111'

/** Writes `total` bytes (Infinity: forever) as fast as the reader takes them, stopping when it hangs up. */
function pump(response: ServerResponse, total: number, count: (bytes: number) => void): void {
  let written = 0
  const more = (): void => {
    while (written < total && !response.destroyed) {
      const chunk = total - written < CHUNK.length ? CHUNK.subarray(0, total - written) : CHUNK
      written += chunk.length
      count(chunk.length)
      if (!response.write(chunk)) return void response.once('drain', more)
    }
    if (written >= total && !response.destroyed) response.end()
  }
  response.writeHead(200, { 'content-type': 'application/json' })
  more()
}

export async function startHostileSource(): Promise<HostileSource> {
  const sent = new Map<string, number>()
  const hits = new Map<string, number>()
  const timers = new Set<NodeJS.Timeout>()
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://source')
    const path = url.pathname
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const count = (bytes: number): void => void sent.set(path, (sent.get(path) ?? 0) + bytes)
    const send = (type: string, body: string | Buffer): void => {
      response.writeHead(200, { 'content-type': type })
      count(Buffer.byteLength(body))
      response.end(body)
    }
    response.on('error', () => undefined)
    switch (path) {
      case '/endless':
        return pump(response, Infinity, count)
      case '/chunked-200mb':
        return pump(response, 200 * 1024 * 1024, count)
      case '/drip': {
        response.writeHead(200, { 'content-type': 'application/json' })
        const timer = setInterval(() => {
          if (response.destroyed) return void clearInterval(timer)
          count(1)
          response.write('1')
        }, 1_000)
        timers.add(timer)
        response.on('close', () => clearInterval(timer))
        return
      }
      case '/deep':
        return send('application/json', `${'['.repeat(16_000)}${']'.repeat(16_000)}`)
      case '/big-number':
        return send('application/json', `{"value":${'9'.repeat(1_000_000)}}`)
      case '/bad-utf8':
        return send(
          'application/json',
          Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        )
      case '/binary':
        return send('image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
      case '/loop':
        response.writeHead(302, {
          location: `/loop?n=${Number(url.searchParams.get('n') ?? 0) + 1}`,
        })
        return response.end()
      case '/wide': {
        const bytes = Number(url.searchParams.get('bytes') ?? 3 * 1024 * 1024)
        return send('application/json', jsonWideBomb(bytes))
      }
      case '/ok':
        return send(
          'application/json',
          JSON.stringify({ value: url.searchParams.get('value') ?? '1' }),
        )
      default:
        response.writeHead(404)
        response.end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    sent,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearInterval(timer)
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
