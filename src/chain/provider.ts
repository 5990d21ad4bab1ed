import { JsonRpcProvider, Network, WebSocketProvider, type AbstractProvider } from 'ethers'
import { WebSocket } from 'ws'
import { z } from 'zod'

export type ChainProvider = JsonRpcProvider | WebSocketProvider

export interface ProviderOptions {
  /** Known chain id: skips ethers' network detection round trips. Asked once over HTTP otherwise. */
  chainId?: number
  /** How often ethers polls for blocks/receipts; 100 ms suits a dev chain. */
  pollingIntervalMs?: number
}

const chainIdAnswer = z.object({ result: z.string().regex(/^0x[0-9a-f]+$/i) })

/** Asks a JSON-RPC endpoint for its chain id with one plain request. */
export async function fetchChainId(rpcUrl: string): Promise<number> {
  const httpUrl = rpcUrl.replace(/^ws(s?):/, 'http$1:')
  const response = await fetch(httpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
  })
  if (!response.ok) throw new Error(`${httpUrl}: eth_chainId answered HTTP ${response.status}`)
  return Number(chainIdAnswer.parse(await response.json()).result)
}

/**
 * An ethers provider for `rpcUrl` (http(s) or ws(s)) with a static network and no call cache:
 * ethers caches identical calls for 250 ms by default, which returns stale nonces and heads to a
 * process that sends back to back.
 */
export async function connectProvider(rpcUrl: string, options: ProviderOptions = {}): Promise<ChainProvider> {
  const chainId = options.chainId ?? (await fetchChainId(rpcUrl))
  const network = Network.from(chainId)
  if (/^wss?:/.test(rpcUrl)) {
    // New heads arrive as subscriptions; there is nothing to poll.
    return new WebSocketProvider(await openWebSocket(rpcUrl), network, { staticNetwork: network, cacheTimeout: -1 })
  }
  return new JsonRpcProvider(rpcUrl, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    pollingInterval: options.pollingIntervalMs ?? 1_000,
    batchStallTime: 2,
    batchMaxCount: 100,
  })
}

export function isWebSocketProvider(provider: AbstractProvider): provider is WebSocketProvider {
  return provider instanceof WebSocketProvider
}

/**
 * Opens a WebSocket and waits until it is open. Given a URL string, ethers opens the socket without
 * an 'error' listener, and an unreachable node then crashes the process (uncaught ECONNREFUSED);
 * here a refused connection is an ordinary error, and later socket errors are kept from crashing.
 */
export function openWebSocket(url: string, timeoutMs = 5_000): Promise<WebSocket> {
  return new Promise((resolveOpen, reject) => {
    const socket = new WebSocket(url)
    const timer = setTimeout(() => {
      socket.terminate()
      reject(new Error(`${new URL(url).host}: WebSocket did not open within ${timeoutMs} ms`))
    }, timeoutMs)
    socket.on('error', (error: Error) => {
      clearTimeout(timer)
      reject(new Error(`${new URL(url).host}: WebSocket error: ${error.message}`))
    })
    socket.once('open', () => {
      clearTimeout(timer)
      resolveOpen(socket)
    })
  })
}
