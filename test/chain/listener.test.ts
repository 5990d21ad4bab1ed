import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Contract, JsonRpcProvider } from 'ethers'
import { decode as decodeCbor } from 'cbor-x'
import type { Redis } from 'ioredis'
import { createRedisConnection } from '../../src/queue/connection.ts'
import {
  createRequestListener,
  type RequestListener,
  type RequestListenerOptions,
} from '../../src/chain/listener/index.ts'
import { connectProvider, HeadTrackingWebSocketProvider } from '../../src/chain/provider.ts'
import {
  ORACLE_REQUEST_TOPIC,
  specIdAscii,
  specIdPadded,
  type CancelRequestEvent,
  type OracleRequestEvent,
} from '../../src/chain/operator.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  PAYMENT,
  TEST_SPEC_ID,
  ValueType,
  consumerAt,
  makeRequests,
  receiptOf,
  rpc,
  startTestChain,
  type TestChain,
} from './support.ts'

const JOB_ID = '0eec7e1d-d0d2-476c-a1a8-72dfb6633f47'

describe('request listener on anvil', () => {
  let chain: TestChain
  let redis: Redis
  let provider: JsonRpcProvider
  const listeners: RequestListener[] = []

  beforeAll(async () => {
    chain = await startTestChain()
    provider = chain.dev.provider as JsonRpcProvider
    redis = createRedisConnection(testRedisUrl(), 'worker')
  })
  afterEach(async () => {
    await Promise.all(listeners.splice(0).map((listener) => listener.stop()))
  })
  afterAll(async () => {
    await redis?.quit()
    await chain?.stop()
  })

  const head = async () => Number(await rpc<string>(provider, 'eth_blockNumber'))

  /** A WebSocket provider of the test chain that records every block it is asked for. */
  async function socketProviderCountingBlockReads() {
    const socketProvider = await connectProvider(chain.anvil.wsUrl, { chainId: chain.dev.chainId })
    const blockReads: unknown[] = []
    const send = socketProvider.send.bind(socketProvider)
    socketProvider.send = async (method, params) => {
      if (method === 'eth_getBlockByNumber' || method === 'eth_getBlockByHash')
        blockReads.push((params as unknown[])[0])
      return send(method, params)
    }
    return { socketProvider, blockReads }
  }

  function listen(overrides: Partial<RequestListenerOptions> & { prefix: string }) {
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
  }

  it('encodes an externalJobID both ways Chainlink accepts', () => {
    expect(specIdAscii(JOB_ID)).toBe(TEST_SPEC_ID)
    expect(specIdPadded(JOB_ID)).toBe(
      '0x0eec7e1dd0d2476ca1a872dfb6633f4700000000000000000000000000000000',
    )
    expect(() => specIdAscii('not-a-uuid')).toThrow(/not a UUID/)
  })

  it('delivers one consumer request once, with every field decoded (HTTP polling)', async () => {
    const prefix = uniquePrefix('listener')
    const { listener, requests } = listen({ prefix, fromBlock: (await head()) + 1 })
    await listener.start()
    const consumer = consumerAt(chain).connect(chain.dev.deployer) as Contract
    const tx = await consumer.getFunction('requestDataWithPath')(
      TEST_SPEC_ID,
      PAYMENT,
      ValueType.Int256,
      ['endpoint', 'homeTeam'],
      ['game-odds', 'Arsenal'],
      'homeOdds',
      '100',
    )
    const receipt = await receiptOf(provider, tx.hash)
    await listener.whenScanned(Number(receipt.blockNumber))
    expect(requests).toHaveLength(1)
    const event = requests[0]!
    const block = await provider.getBlock(Number(receipt.blockNumber))
    const requestId = (await consumer.getFunction('requestIds')(
      (await consumer.getFunction('requestCount')()) - 1n,
    )) as string
    const log = receipt.logs.find((entry) => entry.topics[0] === ORACLE_REQUEST_TOPIC)!
    expect(event).toMatchObject({
      kind: 'request',
      specId: TEST_SPEC_ID,
      requester: chain.dev.addresses.consumer,
      requestId,
      payment: PAYMENT,
      callbackAddr: chain.dev.addresses.consumer,
      callbackFunctionId: await consumer.getFunction('callbackSelector')(ValueType.Int256),
      cancelExpiration: BigInt(block!.timestamp) + 300n,
      dataVersion: 2n,
      blockNumber: Number(receipt.blockNumber),
      blockHash: block!.hash,
      txHash: tx.hash,
      logIndex: Number(log.logIndex),
      operator: chain.dev.addresses.operator,
      chainId: chain.dev.chainId,
      topics: log.topics,
      logData: log.data,
    })
    const params = decodeCbor(
      Buffer.concat([
        Buffer.from([0xbf]),
        Buffer.from(event.data.slice(2), 'hex'),
        Buffer.from([0xff]),
      ]),
    )
    expect(params).toEqual({
      endpoint: 'game-odds',
      homeTeam: 'Arsenal',
      path: 'homeOdds',
      times: '100',
    })

    // Later scans see the same log again (it is inside the rescanned range after a restart) but skip it.
    await listener.stop()
    const restarted = listen({ prefix })
    await restarted.listener.start()
    await restarted.listener.whenScanned(await head())
    expect(restarted.requests).toHaveLength(0)
  })

  it('following the chain a block at a time, reads no block but the head (its parent hash is the reorg check)', async () => {
    const counting = new JsonRpcProvider(chain.anvil.rpcUrl, chain.dev.chainId, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 50,
    })
    const blockReads: unknown[] = []
    const send = counting.send.bind(counting)
    counting.send = async (method, params) => {
      if (method === 'eth_getBlockByNumber' && (params as unknown[])[0] !== 'latest')
        blockReads.push((params as unknown[])[0])
      return send(method, params)
    }
    const { listener, requests } = listen({
      prefix: uniquePrefix('listener'),
      provider: counting,
      fromBlock: (await head()) + 1,
    })
    await listener.start()
    await listener.whenScanned(await head())
    blockReads.length = 0
    for (let i = 0; i < 4; i += 1) {
      const [request] = await makeRequests(chain, 1)
      await listener.whenScanned(request!.blockNumber)
    }
    expect(requests).toHaveLength(4)
    expect(blockReads).toEqual([])
    counting.destroy()
  })

  it('woken by newHeads over a WebSocket, reads no block at all: the notification carries the head', async () => {
    const { socketProvider, blockReads } = await socketProviderCountingBlockReads()
    // A 60 s poll interval: every scan below is one a notification woke.
    const { listener, requests } = listen({
      prefix: uniquePrefix('listener'),
      provider: socketProvider,
      pollIntervalMs: 60_000,
      fromBlock: (await head()) + 1,
    })
    try {
      await listener.start()
      await listener.whenScanned(await head())
      blockReads.length = 0
      for (let i = 0; i < 4; i += 1) {
        const [request] = await makeRequests(chain, 1)
        await listener.whenScanned(request!.blockNumber, 4_000)
      }
      expect(requests).toHaveLength(4)
      expect(blockReads).toEqual([])
    } finally {
      await listener.stop()
      // ethers sends the eth_unsubscribe of off() without waiting for it; destroying at once rejects it.
      await new Promise((resolveDelay) => setTimeout(resolveDelay, 200))
      await socketProvider.destroy()
    }
  })

  it('fallen several blocks behind the head, reads no block either: the notified headers link the head to its checkpoint', async () => {
    const { socketProvider, blockReads } = await socketProviderCountingBlockReads()
    // The first request's handler holds the scan until four more blocks (two with requests) are mined.
    let release: () => void = () => undefined
    const held = new Promise<void>((resolveHold) => (release = resolveHold))
    let first = true
    const { listener, requests } = listen({
      prefix: uniquePrefix('listener'),
      provider: socketProvider,
      pollIntervalMs: 60_000,
      fromBlock: (await head()) + 1,
      onRequest: async (event) => {
        requests.push(event)
        if (first) {
          first = false
          await held
        }
      },
    })
    try {
      await listener.start()
      await listener.whenScanned(await head())
      blockReads.length = 0
      const [firstRequest] = await makeRequests(chain, 1)
      await expect.poll(() => requests.length).toBe(1)
      const later = [...(await makeRequests(chain, 1)), ...(await makeRequests(chain, 1))]
      await rpc(provider, 'evm_mine', [])
      await rpc(provider, 'evm_mine', [])
      const top = await head()
      expect(top - firstRequest!.blockNumber).toBeGreaterThanOrEqual(4)
      // Every header must have been notified before the scan it would answer runs.
      await expect
        .poll(() => (socketProvider as HeadTrackingWebSocketProvider).lastHead?.number)
        .toBe(top)
      release()
      await listener.whenScanned(top, 4_000)
      expect(requests.map((event) => event.requestId)).toEqual(
        [firstRequest, ...later].map((request) => request!.requestId),
      )
      expect(blockReads).toEqual([])
    } finally {
      release()
      await listener.stop()
      await new Promise((resolveDelay) => setTimeout(resolveDelay, 200))
      await socketProvider.destroy()
    }
  })

  it('does not deliver a log twice when a restarted listener reads it again', async () => {
    const prefix = uniquePrefix('listener')
    const first = listen({ prefix, fromBlock: (await head()) + 1 })
    await first.listener.start()
    const [request] = await makeRequests(chain, 1)
    await first.listener.whenScanned(request!.blockNumber)
    expect(first.requests.map((event) => event.requestId)).toEqual([request!.requestId])
    await first.listener.stop()
    // Lose the checkpoint, as if the process died before saving it: the consumed marker still holds.
    await redis.del(`${prefix}:listener:${chain.dev.chainId}:default:checkpoint`)
    const second = listen({ prefix, fromBlock: request!.blockNumber })
    await second.listener.start()
    await second.listener.whenScanned(await head())
    expect(second.requests).toHaveLength(0)
    expect(second.listener.stats.skippedAsConsumed).toBe(1)
  })

  it('backfills a request made while the listener was down', async () => {
    const prefix = uniquePrefix('listener')
    const first = listen({ prefix, fromBlock: (await head()) + 1 })
    await first.listener.start()
    await first.listener.whenScanned(await head())
    await first.listener.stop()
    const requests = await makeRequests(chain, 3)
    await rpc(provider, 'anvil_mine', ['0x5'])
    const second = listen({ prefix })
    await second.listener.start()
    await second.listener.whenScanned(await head())
    expect(second.requests.map((event) => event.requestId)).toEqual(
      requests.map((event) => event.requestId),
    )
  })

  it('backfills a long gap in block ranges and slices, in order', async () => {
    const prefix = uniquePrefix('listener')
    const first = listen({ prefix, fromBlock: (await head()) + 1 })
    await first.listener.poll()
    await first.listener.stop()
    const [early] = await makeRequests(chain, 1)
    await rpc(provider, 'anvil_mine', ['0x40'])
    const [late] = await makeRequests(chain, 1)
    // 3-block getLogs ranges, 30-block scans: the 66-block gap takes several of each.
    const second = listen({ prefix, maxBlockRange: 3 })
    await second.listener.start()
    await second.listener.whenScanned(late!.blockNumber)
    expect(second.requests.map((event) => event.requestId)).toEqual([
      early!.requestId,
      late!.requestId,
    ])
    expect(second.listener.checkpoint).toBeGreaterThanOrEqual(late!.blockNumber)
  })

  it('with 2 confirmations, drops a request whose block is reorged away', async () => {
    const prefix = uniquePrefix('listener')
    const { listener, requests } = listen({
      prefix,
      fromBlock: (await head()) + 1,
      specIds: new Map([[TEST_SPEC_ID, { minConfirmations: 2 }]]),
    })
    const snapshot = await rpc<string>(provider, 'evm_snapshot')
    const [request] = await makeRequests(chain, 1)
    await listener.poll()
    expect(listener.stats.pending).toBe(1)
    expect(requests).toHaveLength(0)

    await rpc(provider, 'evm_revert', [snapshot])
    await rpc(provider, 'anvil_mine', ['0x3'])
    expect(await head()).toBeGreaterThanOrEqual(request!.blockNumber + 1)
    await listener.poll()
    expect(requests).toHaveLength(0)
    expect(listener.stats.pending).toBe(0)
    expect(listener.checkpoint).toBe(await head())

    // The same kind of request in the new chain is delivered once it has its 2 confirmations.
    const [replacement] = await makeRequests(chain, 1)
    await listener.poll()
    expect(requests).toHaveLength(0)
    await rpc(provider, 'anvil_mine', ['0x1'])
    await listener.poll()
    expect(requests.map((event) => event.requestId)).toEqual([replacement!.requestId])
  })

  it('a cancel seen before confirmation stops the request; a later cancel is delivered', async () => {
    const prefix = uniquePrefix('listener')
    const { listener, requests, cancels } = listen({
      prefix,
      fromBlock: (await head()) + 1,
      specIds: new Map([[TEST_SPEC_ID, { minConfirmations: 3 }]]),
    })
    const consumer = consumerAt(chain).connect(chain.dev.deployer) as Contract
    const [request] = await makeRequests(chain, 1)
    await listener.poll()
    expect(listener.stats.pending).toBe(1)
    await rpc(provider, 'evm_increaseTime', [301])
    const cancelTx = await consumer.getFunction('cancelRequest')(
      request!.requestId,
      request!.cancelExpiration,
    )
    expect((await receiptOf(provider, cancelTx.hash)).status).toBe('0x1')
    await rpc(provider, 'anvil_mine', ['0x3'])
    await listener.poll()
    expect(requests).toHaveLength(0)
    expect(cancels.map((event) => event.requestId)).toEqual([request!.requestId])
    expect(listener.stats.cancelledBeforeDelivery).toBe(1)
    const record = await consumer.getFunction('requests')(request!.requestId)
    expect(record.cancelled).toBe(true)
  })

  it('filters by spec id and accepts the padded UUID encoding (WebSocket provider)', async () => {
    const prefix = uniquePrefix('listener')
    const padded = specIdPadded(JOB_ID)
    const other = specIdAscii('11111111-2222-3333-4444-555555555555')
    const { listener, requests } = listen({
      prefix,
      rpcUrl: chain.anvil.wsUrl,
      // A poll this far apart never comes within the test: only the subscription can wake the scan.
      pollIntervalMs: 3_600_000,
      fromBlock: (await head()) + 1,
      specIds: new Map([[padded, { minConfirmations: 1 }]]),
    })
    await listener.start()
    const [ignored] = await makeRequests(chain, 1, { specId: other })
    const [wanted] = await makeRequests(chain, 1, { specId: padded })
    // Woken by the new-heads subscription (the poll is an hour away).
    await listener.whenScanned(wanted!.blockNumber, 60_000)
    expect(requests.map((event) => event.requestId)).toEqual([wanted!.requestId])
    expect(requests[0]!.specId).toBe(padded)
    expect(ignored!.requestId).not.toBe(wanted!.requestId)
  })

  it('delivers again after a failed handler, and only then marks the log consumed', async () => {
    const prefix = uniquePrefix('listener')
    let failures = 1
    const seen: string[] = []
    const errors: Error[] = []
    const { listener } = listen({
      prefix,
      fromBlock: (await head()) + 1,
      onRequest: (event) => {
        seen.push(event.requestId)
        if (failures-- > 0) throw new Error('queue unavailable')
      },
      onError: (error) => errors.push(error),
    })
    const [request] = await makeRequests(chain, 1)
    await listener.poll()
    expect(errors[0]?.message).toMatch(/queue unavailable/)
    expect(listener.checkpoint).toBe(request!.blockNumber - 1)
    await listener.poll()
    await listener.poll()
    expect(seen).toEqual([request!.requestId, request!.requestId])
    expect(listener.checkpoint).toBe(await head())
  })
})
