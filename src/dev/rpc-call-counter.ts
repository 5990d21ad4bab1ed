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
import { startJsonRpcProxy, type Transport } from './json-rpc-proxy.ts'

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
  const count = (body: string, transport: Transport) => {
    for (const method of methodsOf(body)) {
      counts.calls[method] = (counts.calls[method] ?? 0) + 1
      counts.byTransport[transport] += 1
      if (transport === 'ws') counts.wsCalls[method] = (counts.wsCalls[method] ?? 0) + 1
    }
  }
  const proxy = await startJsonRpcProxy(target, {
    onRequest: count,
    pushed(message) {
      if (/"method"\s*:\s*"eth_subscription"/.test(message)) counts.notifications += 1
      return message
    },
  })
  return {
    httpUrl: proxy.httpUrl,
    wsUrl: proxy.wsUrl,
    snapshot: () => ({
      calls: { ...counts.calls },
      byTransport: { ...counts.byTransport },
      wsCalls: { ...counts.wsCalls },
      notifications: counts.notifications,
    }),
    stop: () => proxy.stop(),
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

/** `after - before`, by method, calls only (largest first). */
export function callsBetween(before: RpcCounts, after: RpcCounts): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after.calls)
      .map(([method, calls]): [string, number] => [method, calls - (before.calls[method] ?? 0)])
      .filter(([, calls]) => calls > 0)
      .sort((a, b) => b[1] - a[1]),
  )
}
