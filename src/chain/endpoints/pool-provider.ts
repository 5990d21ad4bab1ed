import { JsonRpcProvider, Network, type JsonRpcResult } from 'ethers'
import type { EndpointPool } from './pool.ts'

/**
 * An ethers provider whose every request goes through a chain's endpoint pool: to the healthiest
 * endpoint, and to the next one when it fails. Static network, no call cache (see provider.ts), and
 * polled like the HTTP provider it replaces (it is one, whose own URL is never asked: every request
 * leaves through `_send`).
 */
export class PoolProvider extends JsonRpcProvider {
  constructor(
    private readonly pool: EndpointPool,
    pollingIntervalMs: number,
  ) {
    const network = Network.from(pool.chainId)
    super('http://endpoint-pool.invalid', network, {
      staticNetwork: network,
      cacheTimeout: -1,
      pollingInterval: pollingIntervalMs,
      batchStallTime: 2,
      batchMaxCount: 100,
    })
  }

  /** The chain's head header, the pool's one shared read (EndpointPool.latestHeader). */
  latestHeader(): Promise<unknown> {
    return this.pool.latestHeader()
  }

  override async _send(payload: Parameters<JsonRpcProvider['_send']>[0]): Promise<JsonRpcResult[]> {
    return this.pool.sendPayload(payload)
  }
}
