import { JsonRpcProvider, Network, SocketBlockSubscriber, WebSocketProvider, type AbstractProvider, type SocketProvider, type Subscriber, type Subscription } from 'ethers'
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
    const socket = new WebSocket(rpcUrl)
    const opened = socketOpened(socket, rpcUrl)
    // ethers starts the provider from the socket's onopen, so it must get the socket before it opens.
    const provider = new HeadTrackingWebSocketProvider(socket, network, { staticNetwork: network, cacheTimeout: -1 })
    try {
      await opened
    } catch (error) {
      await provider.destroy()
      throw error
    }
    return provider
  }
  return new JsonRpcProvider(rpcUrl, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    pollingInterval: options.pollingIntervalMs ?? 1_000,
    batchStallTime: 2,
    batchMaxCount: 100,
  })
}

/** A block header as a `newHeads` notification carries it. */
export interface HeadHeader {
  number: number
  hash: string
  parentHash: string
}

const headHeader = z.object({
  number: z.string().regex(/^0x[0-9a-f]+$/i),
  hash: z.string().regex(/^0x[0-9a-f]{64}$/i),
  parentHash: z.string().regex(/^0x[0-9a-f]{64}$/i),
})

/**
 * A WebSocket provider that keeps the header of the last `newHeads` notification: ethers passes only
 * the block number on, and a listener woken by the notification would otherwise ask for the very block
 * it was just told about.
 */
export class HeadTrackingWebSocketProvider extends WebSocketProvider {
  lastHead: HeadHeader | undefined

  override _getSubscriber(sub: Subscription): Subscriber {
    return sub.type === 'block' ? new HeadTrackingBlockSubscriber(this) : super._getSubscriber(sub)
  }
}

class HeadTrackingBlockSubscriber extends SocketBlockSubscriber {
  constructor(private readonly tracking: HeadTrackingWebSocketProvider) {
    super(tracking)
  }

  override async _emit(provider: SocketProvider, message: unknown): Promise<void> {
    const header = headHeader.safeParse(message)
    if (header.success) this.tracking.lastHead = { number: Number(header.data.number), hash: header.data.hash, parentHash: header.data.parentHash }
    await super._emit(provider, message)
  }
}

export function isWebSocketProvider(provider: AbstractProvider): provider is WebSocketProvider {
  return provider instanceof WebSocketProvider
}

/**
 * Resolves when `socket` opens. Given a URL string, ethers opens the socket without an 'error'
 * listener, and an unreachable node then crashes the process (uncaught ECONNREFUSED); with this
 * listener a refused connection is an ordinary error, and later socket errors cannot crash it.
 */
function socketOpened(socket: WebSocket, url: string, timeoutMs = 5_000): Promise<void> {
  const host = new URL(url).host
  return new Promise((resolveOpen, reject) => {
    const timer = setTimeout(() => {
      socket.terminate()
      reject(new Error(`${host}: WebSocket did not open within ${timeoutMs} ms`))
    }, timeoutMs)
    socket.on('error', (error: Error) => {
      clearTimeout(timer)
      reject(new Error(`${host}: WebSocket error: ${error.message}`))
    })
    socket.once('open', () => {
      clearTimeout(timer)
      resolveOpen()
    })
  })
}
