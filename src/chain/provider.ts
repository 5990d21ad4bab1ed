import {
  FetchRequest,
  JsonRpcProvider,
  Network,
  SocketBlockSubscriber,
  WebSocketProvider,
  type AbstractProvider,
  type SocketProvider,
  type Subscriber,
  type Subscription,
} from 'ethers'
import { WebSocket } from 'ws'
import { z } from 'zod'
import { reasonOf } from '../config/dependency-health.ts'
import { FeedrunnerError } from '../config/errors.ts'
import { DEFAULT_SETTINGS, endpointOf } from '../config/settings.ts'
import { boundedGetUrl } from './bounded-get-url.ts'
import { NodeJsonRpcProvider } from './node-json-rpc-provider.ts'
import { headHeaderOf, type HeadHeader } from './head-header.ts'
import { RecentHeaders } from './recent-headers.ts'

export { EMPTY_TRIE_ROOT, headHeaderOf, type HeadHeader } from './head-header.ts'

export type ChainProvider = JsonRpcProvider | WebSocketProvider

export interface ProviderOptions {
  /** Known chain id: skips ethers' network detection round trips. Asked once over HTTP otherwise. */
  chainId?: number
  /** How often ethers polls for blocks/receipts; 100 ms suits a dev chain. */
  pollingIntervalMs?: number
  /** RPC_MAX_RESPONSE_BYTES: the largest answer read from the node (HTTP body or WebSocket message). */
  maxResponseBytes?: number
}

const chainIdAnswer = z.object({ result: z.string().regex(/^0x[0-9a-f]+$/i) })

/** Asks a JSON-RPC endpoint for its chain id with one plain request. */
export async function fetchChainId(rpcUrl: string, setting = 'RPC_URL'): Promise<number> {
  const httpUrl = rpcUrl.replace(/^ws(s?):/, 'http$1:')
  // Only host and port in messages: the path or query of an RPC URL often carries an API key.
  const where = `${setting} ${endpointOf(rpcUrl)}`
  let response: Response
  try {
    response = await fetch(httpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(CHAIN_ID_TIMEOUT_MS),
    })
  } catch (error) {
    throw new FeedrunnerError(
      `nothing answers at ${where} (${reasonOf(error)}): start the node, or set ${setting} to one that runs`,
      { kind: 'unavailable', cause: error },
    )
  }
  if (!response.ok)
    throw new FeedrunnerError(`${where} answered eth_chainId with HTTP ${response.status}`, {
      kind: 'upstream',
    })
  const answer = chainIdAnswer.safeParse(await response.json().catch(() => undefined))
  if (!answer.success)
    throw new FeedrunnerError(
      `${where} answered eth_chainId without a chain id: is it a JSON-RPC node?`,
      { kind: 'upstream' },
    )
  return Number(answer.data.result)
}

/** A read of the node (logs, blocks, calls) that has no answer within this long fails and is retried. */
const RPC_READ_TIMEOUT_MS = 30_000

/** A node that has not told its chain id within this long is taken as not answering. */
const CHAIN_ID_TIMEOUT_MS = 5_000

/**
 * An ethers provider for `rpcUrl` (http(s) or ws(s)) with a static network and no call cache:
 * ethers caches identical calls for 250 ms by default, which returns stale nonces and heads to a
 * process that sends back to back.
 */
export async function connectProvider(
  rpcUrl: string,
  options: ProviderOptions = {},
): Promise<ChainProvider> {
  const chainId = options.chainId ?? (await fetchChainId(rpcUrl))
  const network = Network.from(chainId)
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_SETTINGS.RPC_MAX_RESPONSE_BYTES
  if (/^wss?:/.test(rpcUrl)) {
    // New heads arrive as subscriptions; there is nothing to poll. A message over the cap closes the
    // socket (ws's maxPayload) instead of being buffered whole.
    const socket = new WebSocket(rpcUrl, { maxPayload: maxResponseBytes })
    const opened = socketOpened(socket, rpcUrl)
    // ethers starts the provider from the socket's onopen, so it must get the socket before it opens.
    const provider = new HeadTrackingWebSocketProvider(socket, network, {
      staticNetwork: network,
      cacheTimeout: -1,
    })
    try {
      await opened
    } catch (error) {
      await provider.destroy()
      throw error
    }
    return provider
  }
  const connection = new FetchRequest(rpcUrl)
  connection.getUrlFunc = boundedGetUrl(maxResponseBytes)
  // ethers waits 300 s for an answer by default: a read lost on a link that went down mid-call would
  // hold the listener that long. The sender's own calls give up after 30 s as well.
  connection.timeout = RPC_READ_TIMEOUT_MS
  return new NodeJsonRpcProvider(connection, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    pollingInterval: options.pollingIntervalMs ?? DEFAULT_SETTINGS.CHAIN_POLL_INTERVAL_MS,
    batchStallTime: 2,
    batchMaxCount: 100,
  })
}

/**
 * A WebSocket provider that keeps the headers of the last `newHeads` notifications: ethers passes only
 * the block number on, and a listener woken by the notification would otherwise ask for the very block
 * it was just told about, and for each block between its checkpoint and the head when it fell behind.
 */
export class HeadTrackingWebSocketProvider extends WebSocketProvider {
  lastHead: HeadHeader | undefined
  /** The last notified header as the node sent it (number, hashes, timestamp, base fee, ...). */
  lastHeadBlock: unknown
  /** The notified headers (and those its readers read), linked down from a head by parent hash. */
  readonly recentHeaders = new RecentHeaders()

  override _getSubscriber(sub: Subscription): Subscriber {
    return sub.type === 'block' ? new HeadTrackingBlockSubscriber(this) : super._getSubscriber(sub)
  }

  notified(header: HeadHeader, block?: unknown): void {
    this.lastHead = header
    this.lastHeadBlock = block
    this.recentHeaders.note(header)
  }
}

class HeadTrackingBlockSubscriber extends SocketBlockSubscriber {
  constructor(private readonly tracking: HeadTrackingWebSocketProvider) {
    super(tracking)
  }

  override async _emit(provider: SocketProvider, message: unknown): Promise<void> {
    const header = headHeaderOf(message)
    if (header) this.tracking.notified(header, message)
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
