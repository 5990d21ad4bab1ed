import type { JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll } from 'vitest'
import {
  createRequestListener,
  type RequestListener,
  type RequestListenerOptions,
} from '../../src/chain/listener/index.ts'
import { connectProvider, type ChainProvider } from '../../src/chain/provider.ts'
import type { CancelRequestEvent, OracleRequestEvent } from '../../src/chain/operator.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { testRedisUrl } from '../support/redis.ts'
import { rpc, startTestChain, TEST_SPEC_ID, type TestChain } from './support.ts'

/** A listener of listen() and what it delivered. */
export interface Listening {
  listener: RequestListener
  requests: OracleRequestEvent[]
  cancels: CancelRequestEvent[]
}

/** The request listener tests' chain and Redis, started before a file's tests. */
export interface ListenerTestChain {
  readonly chain: TestChain
  readonly provider: JsonRpcProvider
  readonly redis: Redis
  /** The chain's head block number. */
  head(): Promise<number>
  /** A listener of the test chain's Operator (TEST_SPEC_ID, 1 confirmation, 50 ms polls); stopped after the test. */
  listen(overrides: Partial<RequestListenerOptions> & { prefix: string }): Listening
  /**
   * Marks the chain as it is now; the answer later replaces every block after the mark with
   * `blocks` others at the same heights (made later: other hashes), as a reorg does.
   */
  markForReorg(): Promise<(blocks: number) => Promise<void>>
  /** A WebSocket provider of the test chain that records every block it is asked for. */
  socketProviderCountingBlockReads(): Promise<{
    socketProvider: ChainProvider
    blockReads: unknown[]
  }>
}

/**
 * Starts anvil with the dev contracts and a Redis connection in the calling file's beforeAll, stops
 * the listeners a test started after it, and stops the chain and the connection in afterAll.
 */
export function useListenerTestChain(): ListenerTestChain {
  let chain: TestChain | undefined
  let redis: Redis | undefined
  const listeners: RequestListener[] = []

  beforeAll(async () => {
    chain = await startTestChain()
    redis = createRedisConnection(testRedisUrl(), 'worker')
  })
  afterEach(async () => {
    await Promise.all(listeners.splice(0).map((listener) => listener.stop()))
  })
  afterAll(async () => {
    await redis?.quit()
    await chain?.stop()
  })

  const started = () => {
    if (!chain || !redis) throw new Error('the test chain is not started (used outside a test?)')
    return { chain, redis, provider: chain.dev.provider as JsonRpcProvider }
  }

  return {
    get chain() {
      return started().chain
    },
    get provider() {
      return started().provider
    },
    get redis() {
      return started().redis
    },
    head: async () => Number(await rpc<string>(started().provider, 'eth_blockNumber')),
    listen(overrides) {
      const { chain, redis } = started()
      const requests: OracleRequestEvent[] = []
      const cancels: CancelRequestEvent[] = []
      const listener = createRequestListener({
        rpcUrl: chain.anvil.rpcUrl,
        chainId: chain.dev.chainId,
        operators: [chain.dev.addresses.operator],
        specIds: new Map([[TEST_SPEC_ID, { minConfirmations: 1 }]]),
        redis,
        pollIntervalMs: 50,
        onRequest: (event) => {
          requests.push(event)
        },
        onCancel: (event) => {
          cancels.push(event)
        },
        ...overrides,
      })
      listeners.push(listener)
      return { listener, requests, cancels }
    },
    async markForReorg() {
      const { provider } = started()
      const snapshot = await rpc<string>(provider, 'evm_snapshot')
      const block = await rpc<{ timestamp: string }>(provider, 'eth_getBlockByNumber', [
        'latest',
        false,
      ])
      return async (blocks) => {
        await rpc(provider, 'evm_revert', [snapshot])
        for (let at = 1; at <= blocks; at++)
          await rpc(provider, 'evm_mine', [Number(block.timestamp) + 100 + at])
      }
    },
    async socketProviderCountingBlockReads() {
      const { chain } = started()
      const socketProvider = await connectProvider(chain.anvil.wsUrl, {
        chainId: chain.dev.chainId,
      })
      const blockReads: unknown[] = []
      const send = socketProvider.send.bind(socketProvider)
      socketProvider.send = async (method, params) => {
        if (method === 'eth_getBlockByNumber' || method === 'eth_getBlockByHash')
          blockReads.push((params as unknown[])[0])
        return send(method, params)
      }
      return { socketProvider, blockReads }
    },
  }
}
