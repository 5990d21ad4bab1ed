import { beforeAll, describe, expect, it } from 'vitest'
import { Contract, JsonRpcProvider } from 'ethers'
import { decode as decodeCbor } from 'cbor-x'
import { HeadTrackingWebSocketProvider } from '../../src/chain/provider.ts'
import { ORACLE_REQUEST_TOPIC, specIdAscii, specIdPadded } from '../../src/chain/operator.ts'
import { uniquePrefix } from '../support/redis.ts'
import { useListenerTestChain } from './listener-support.ts'
import {
  PAYMENT,
  TEST_SPEC_ID,
  ValueType,
  consumerAt,
  makeRequests,
  receiptOf,
  rpc,
  type TestChain,
} from './support.ts'

const JOB_ID = '0eec7e1d-d0d2-476c-a1a8-72dfb6633f47'

/**
 * How the request listener finds requests and what it reads for them: every field of a request,
 * the blocks it reads polling over HTTP or woken over a WebSocket, and the spec ids it filters by.
 * Restarts, backfills, reorgs, cancels and failed handlers: listener-recovery.test.ts.
 */
describe('request listener on anvil', () => {
  const testChain = useListenerTestChain()
  const { head, listen, socketProviderCountingBlockReads } = testChain
  let chain: TestChain
  let provider: JsonRpcProvider

  beforeAll(() => {
    ;({ chain, provider } = testChain)
  })

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
})
