import { createRequire } from 'node:module'
import {
  FetchRequest,
  JsonRpcProvider,
  Network,
  WebSocketProvider,
  type AbstractProvider,
  type WebSocketLike,
} from 'ethers'
import { z } from 'zod'
import { FeedServiceError } from '../errors.ts'
import { FeedrunnerError } from '../../../config/errors.ts'

// One JSON-RPC connection per configured blockchain id, opened on first use and re-opened after the
// node went away. Every call is bounded in time and every failure becomes a FeedServiceError:
// 503 when the node cannot be reached (refused, timed out, socket closed), 502 when it answered
// but not with what we asked for. Descriptions name the blockchain id and the node's origin only:
// the URL's path or query may hold a provider key (Infura, Alchemy), which must never be echoed.

export const DEFAULT_RPC_TIMEOUT_MS = 10_000

/** The subset of the `ws` package's WebSocket this module uses (ethers' own dependency, see below). */
interface NodeWebSocket extends WebSocketLike {
  on(event: 'open', listener: () => void): void
  on(event: 'error', listener: (error: Error) => void): void
  on(event: 'close', listener: () => void): void
}
type NodeWebSocketClass = new (url: string) => NodeWebSocket

/**
 * ethers' WebSocketProvider, given a URL string, opens the socket itself without an 'error'
 * listener: an unreachable ws URL then crashes the process (uncaught ECONNREFUSED). We open the
 * socket ourselves with the `ws` package that ethers depends on (resolved from ethers' own folder,
 * so no extra dependency) and listen for its errors.
 */
function webSocketClass(): NodeWebSocketClass {
  const requireFromHere = createRequire(import.meta.url)
  const requireFromEthers = createRequire(requireFromHere.resolve('ethers'))
  const loaded = requireFromEthers('ws') as NodeWebSocketClass | { WebSocket: NodeWebSocketClass }
  return 'WebSocket' in loaded ? loaded.WebSocket : loaded
}

/** `http://host:port` of a URL, without user info, path or query (which may carry secrets). */
export function originOf(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return '(unparseable URL)'
  }
}

interface Connection {
  provider: AbstractProvider
  /**
   * Calls `listener` when the connection is lost (a closed WebSocket; at once if it already is);
   * returns the unsubscribe function. A listener per call, removed after the call, rather than one
   * shared never-settling promise that every call would hang a reaction on for ever.
   */
  onLost(listener: (error: Error) => void): () => void
}

/** Lost-connection listeners of a WebSocket connection. */
class LossSignal {
  private readonly listeners = new Set<(error: Error) => void>()
  private lostWith: Error | undefined

  subscribe = (listener: (error: Error) => void): (() => void) => {
    if (this.lostWith !== undefined) listener(this.lostWith)
    else this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  fire(error: Error): void {
    this.lostWith ??= error
    for (const listener of this.listeners) listener(error)
    this.listeners.clear()
  }
}

/** HTTP has no connection to lose: each request stands alone. */
const neverLost = (): (() => void) => () => undefined

const chainIdAnswer = z.object({ result: z.string().regex(/^0x[0-9a-fA-F]+$/) })

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'TIMEOUT',
  'NETWORK_ERROR',
])

class Unreachable extends FeedrunnerError {
  override readonly name = 'Unreachable'
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { kind: 'unavailable', ...options })
  }
}

/** A JSON-RPC node for one blockchain id. */
export class ChainRpc {
  private connection: Promise<Connection> | undefined
  private closed = false

  constructor(
    readonly blockchain: string,
    private readonly url: string,
    private readonly timeoutMs: number = DEFAULT_RPC_TIMEOUT_MS,
  ) {}

  /** What descriptions call this node: the blockchain id and the node's origin. */
  get label(): string {
    return `blockchain '${this.blockchain}' (JSON-RPC node at ${originOf(this.url)})`
  }

  /**
   * Runs `work` against the node within the time limit. Failures that are not already a
   * FeedServiceError become 503 (unreachable; the connection is dropped and re-opened next time)
   * or 502 (the node answered with an error).
   */
  async use<T>(what: string, work: (provider: AbstractProvider) => Promise<T>): Promise<T> {
    if (this.closed)
      throw new FeedServiceError(503, `${this.label} is closed: the service is shutting down`)
    let timer: NodeJS.Timeout | undefined
    let unsubscribe = (): unknown => undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Unreachable(`no answer within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      )
    })
    try {
      const connection = await Promise.race([this.connect(), deadline])
      const lost = new Promise<never>((_, reject) => (unsubscribe = connection.onLost(reject)))
      return await Promise.race([work(connection.provider), lost, deadline])
    } catch (error) {
      const mapped = this.describe(what, error)
      if (mapped.status === 503) this.drop()
      throw mapped
    } finally {
      clearTimeout(timer)
      unsubscribe()
    }
  }

  async close(): Promise<void> {
    this.closed = true
    this.drop()
  }

  private connect(): Promise<Connection> {
    this.connection ??= this.open().catch((error: unknown) => {
      this.connection = undefined
      throw error
    })
    return this.connection
  }

  private drop(): void {
    const connection = this.connection
    this.connection = undefined
    void connection?.then(
      (open) => open.provider.destroy(),
      () => undefined,
    )
  }

  private open(): Promise<Connection> {
    return /^wss?:/i.test(this.url) ? this.openWebSocket() : this.openHttp()
  }

  private async openHttp(): Promise<Connection> {
    const request = new FetchRequest(this.url)
    request.timeout = this.timeoutMs
    // Asking the chain id ourselves gives ethers a static network: without one, ethers retries its
    // network detection every second forever (and logs each try) while the node is down.
    request.body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })
    request.setHeader('content-type', 'application/json')
    const response = await request.send()
    if (!response.ok())
      throw new Error(`eth_chainId answered HTTP ${response.statusCode} ${response.statusMessage}`)
    const answer = chainIdAnswer.safeParse(response.bodyJson)
    if (!answer.success)
      throw new Error('eth_chainId did not answer a chain id: this is not an EVM JSON-RPC node')
    const connection = new FetchRequest(this.url)
    connection.timeout = this.timeoutMs
    const network = Network.from(BigInt(answer.data.result))
    const provider = new JsonRpcProvider(connection, network, {
      staticNetwork: network,
      cacheTimeout: -1,
      batchMaxCount: 20,
    })
    return { provider, onLost: neverLost }
  }

  private async openWebSocket(): Promise<Connection> {
    const WebSocket = webSocketClass()
    const socket = new WebSocket(this.url)
    const loss = new LossSignal()
    let opened = false
    const opening = new Promise<void>((resolve, reject) => {
      socket.on('open', () => {
        opened = true
        resolve()
      })
      socket.on('error', (error) => {
        const failure = new Unreachable(error.message)
        if (!opened) reject(failure)
        loss.fire(failure)
      })
      socket.on('close', () => {
        const failure = new Unreachable('the WebSocket connection was closed')
        if (!opened) reject(failure)
        loss.fire(failure)
        // A closed socket cannot be reused: the next call opens a new one.
        if (this.connection !== undefined) this.drop()
      })
    })
    // Handed over before it opens: ethers starts the provider from the socket's `onopen`.
    const provider = new WebSocketProvider(socket, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    })
    let unsubscribe = (): unknown => undefined
    try {
      await opening
      const lost = new Promise<never>((_, reject) => (unsubscribe = loss.subscribe(reject)))
      await Promise.race([provider.getNetwork(), lost])
    } catch (error) {
      void provider.destroy()
      throw error
    } finally {
      unsubscribe()
    }
    return { provider, onLost: loss.subscribe }
  }

  private describe(what: string, error: unknown): FeedServiceError {
    if (error instanceof FeedServiceError) return error
    if (error instanceof Unreachable || isUnreachable(error)) {
      return new FeedServiceError(
        503,
        `${this.label} cannot be reached (${what}): ${errorText(error)}`,
      )
    }
    return new FeedServiceError(502, `${this.label} failed to answer ${what}: ${errorText(error)}`)
  }
}

function isUnreachable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, cause } = error as { code?: unknown; cause?: unknown }
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true
  return cause !== undefined && cause !== error && isUnreachable(cause)
}

/**
 * A short reason without the request details ethers appends to its messages (they include the
 * request URL, which may carry a key).
 */
function errorText(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error)
  const {
    shortMessage,
    message,
    error: rpcError,
  } = error as { shortMessage?: unknown; message?: unknown; error?: { message?: unknown } }
  const rpcMessage = typeof rpcError?.message === 'string' ? `: ${rpcError.message}` : ''
  if (typeof shortMessage === 'string') return `${shortMessage}${rpcMessage}`
  return typeof message === 'string' ? (message.split(' (')[0] ?? message) : 'unknown error'
}
