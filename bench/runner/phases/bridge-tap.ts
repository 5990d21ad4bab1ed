/**
 * A counting pass-through in front of the adapter, for the flux phase's bridge (BRIDGE_DATAFEED_URL):
 * every bridge call a job's run makes, and every distinct answer of the feed service behind them. The
 * local feed service stamps each answer it makes with its time (`timestamp`, which the adapter passes
 * on as `timestamps.providerIndicatedTimeUnixMs`), and an answer from the adapter's cache, or one
 * fetch shared by equal queries, carries the stamp of the fetch it came from: distinct stamps are the
 * upstream fetches.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface BridgeCounts {
  calls: number
  /** Distinct feed-service answers among the bridge's answers. */
  fetches: number
}

export interface BridgeTap {
  readonly url: string
  counts(): BridgeCounts
  stop(): Promise<void>
}

export async function startBridgeTap(adapterUrl: string): Promise<BridgeTap> {
  let calls = 0
  const stamps = new Set<number>()
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      calls += 1
      void fetch(adapterUrl, {
        method: request.method,
        headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
        body: Buffer.concat(chunks),
      })
        .then(async (answer) => {
          const text = await answer.text()
          const stamp = providerTimeOf(text)
          if (stamp !== undefined) stamps.add(stamp)
          response.writeHead(answer.status, { 'content-type': 'application/json' }).end(text)
        })
        .catch(() => response.writeHead(502).end())
    })
  })
  await new Promise<void>((resolveListening) => server.listen(0, '127.0.0.1', resolveListening))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts: () => ({ calls, fetches: stamps.size }),
    stop: () => new Promise<void>((resolveClosed) => server.close(() => resolveClosed())),
  }
}

function providerTimeOf(text: string): number | undefined {
  try {
    const stamp = (JSON.parse(text) as { timestamps?: { providerIndicatedTimeUnixMs?: unknown } })
      .timestamps?.providerIndicatedTimeUnixMs
    return typeof stamp === 'number' ? stamp : undefined
  } catch {
    return undefined
  }
}
