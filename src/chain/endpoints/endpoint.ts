import { JsonRpcProvider } from 'ethers'
import type { EndpointConfig } from '../../config/chains.ts'
import type { DependencyHealth } from '../../config/dependency-health.ts'
import { endpointOf } from '../../config/settings.ts'
import { connectProvider } from '../provider.ts'
import {
  createJsonRpcClient,
  postJsonRpcBatch,
  type JsonRpcClient,
  type RpcCall,
  type RpcOutcome,
} from '../sender/json-rpc-batch.ts'

/** What a pool knows of one endpoint's health; the metrics and the pool's choice read it. */
export interface EndpointHealth {
  /** In the pool: answering and not lagging. */
  up: boolean
  /** The last head it told (undefined before its first answer, and for a send-only endpoint). */
  head: number | undefined
  /** Blocks behind the best endpoint's head at the last probe. */
  lag: number
  /** Smoothed round trip of its answers (ms). */
  latencyMs: number
  /** Calls and probes that failed, since the start. */
  errors: number
  /** Why it is out, when it is. */
  reason: string | undefined
}

export interface EndpointOptions {
  config: EndpointConfig
  /** Its place in the chain's list, from 1: the `endpoint` label of its metrics (never its URL). */
  index: number
  chainId: number
  /** Its outage lines: down, still down once a minute, back (src/config/dependency-health.ts). */
  health: DependencyHealth
  timeoutMs: number
  maxResponseBytes?: number
  pollIntervalMs: number
}

/** Failures in a row that take an endpoint out of its pool. */
const FAILURES_TO_TAKE_OUT = 2

/** Weight of a new round trip in the smoothed latency. */
const LATENCY_WEIGHT = 0.3

/**
 * One RPC endpoint of a chain: a batching JSON-RPC client for raw calls and broadcasts, an ethers
 * provider for what ethers decodes (calls, logs), and its health. Reads and broadcasts go over HTTP
 * (a ws(s) URL is asked on the same host and path over http(s)).
 */
export class RpcEndpoint {
  readonly config: EndpointConfig
  readonly index: number
  readonly url: string
  readonly state: EndpointHealth = {
    up: true,
    head: undefined,
    lag: 0,
    latencyMs: 0,
    errors: 0,
    reason: undefined,
  }
  private failuresInRow = 0
  private readonly client: JsonRpcClient
  private provider: JsonRpcProvider | undefined

  constructor(private readonly options: EndpointOptions) {
    this.config = options.config
    this.index = options.index
    this.url = options.config.url.replace(/^ws(s?):/, 'http$1:')
    this.client = createJsonRpcClient(this.url, options.timeoutMs, options.maxResponseBytes)
  }

  /** `RPC_URL 127.0.0.1:8545`, `CHAINS_FILE chains.toml chain 1 endpoint 2 rpc.example:443`. */
  get name(): string {
    return `${this.config.setting} ${endpointOf(this.config.url)}`
  }

  get sendOnly(): boolean {
    return this.config.sendOnly
  }

  /** One raw call (batched with the others of the tick); its outcome updates the health. */
  async call<T>(method: string, params: readonly unknown[]): Promise<T> {
    return this.timed(() => this.client.call<T>(method, params))
  }

  /** One batch as it is (a broadcast's, in nonce order). */
  async postBatch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    return this.timed(() =>
      postJsonRpcBatch(this.url, calls, this.options.timeoutMs, this.options.maxResponseBytes),
    )
  }

  /** Sends an ethers payload (one call or a batch) as ethers' own provider would. */
  async sendPayload(payload: Parameters<JsonRpcProvider['_send']>[0]) {
    this.provider ??= (await connectProvider(this.url, {
      chainId: this.options.chainId,
      pollingIntervalMs: this.options.pollIntervalMs,
      maxResponseBytes: this.options.maxResponseBytes,
    })) as JsonRpcProvider
    const provider = this.provider
    return this.timed(() => provider._send(payload))
  }

  /** A round trip that answered: its latency joins the smoothed one. */
  private async timed<T>(call: () => Promise<T>): Promise<T> {
    const started = performance.now()
    const result = await call()
    this.failuresInRow = 0
    const ms = performance.now() - started
    this.state.latencyMs =
      this.state.latencyMs === 0
        ? ms
        : this.state.latencyMs * (1 - LATENCY_WEIGHT) + ms * LATENCY_WEIGHT
    return result
  }

  /**
   * A call failed for a reason of the endpoint's (no answer, HTTP error, garbage): out of the pool at
   * the second failure in a row. One failure alone is what a kept-alive connection the endpoint closed
   * meanwhile gives on its next use (seen right after an outage ends): taking the endpoint out for it
   * would report a second outage that never was. A dead endpoint fails every call and probe, so it is
   * out within a probe interval anyway.
   */
  failed(error: unknown): void {
    this.state.errors++
    this.failuresInRow++
    if (this.state.up && this.failuresInRow < FAILURES_TO_TAKE_OUT) return
    this.options.health.failed(error)
    if (this.state.up) {
      this.state.up = false
      this.state.reason = 'not answering'
    }
  }

  /** Lags too far behind the best endpoint: out of the pool until it catches up. */
  lagging(lag: number, limit: number): void {
    this.state.lag = lag
    if (!this.state.up) return
    this.state.up = false
    this.state.reason = `${lag} blocks behind`
    this.options.health.failed(
      new Error(`${lag} blocks behind the chain's best endpoint (more than ${limit})`),
    )
  }

  /** A probe answered and it keeps up: back in the pool (the back line says how long it was out). */
  recovered(): void {
    this.options.health.answered()
    if (this.state.up) return
    this.state.up = true
    this.state.reason = undefined
  }

  close(): void {
    this.options.health.close()
    this.provider?.destroy()
  }
}
