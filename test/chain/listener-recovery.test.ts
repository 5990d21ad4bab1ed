import { beforeAll, describe, expect, it } from 'vitest'
import { Contract, JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import { rootCauseFirst } from '../../src/config/errors.ts'
import { uniquePrefix } from '../support/redis.ts'
import { useListenerTestChain } from './listener-support.ts'
import {
  TEST_SPEC_ID,
  consumerAt,
  makeRequests,
  receiptOf,
  rpc,
  type TestChain,
} from './support.ts'

/**
 * The request listener after things go wrong: restarted (with or without its checkpoint), down
 * while requests were made, a request reorged away or cancelled before its confirmations, a
 * handler that failed. Finding requests and what it reads for them: listener-delivery.test.ts.
 */
describe('request listener on anvil', () => {
  const testChain = useListenerTestChain()
  const { head, listen } = testChain
  let chain: TestChain
  let provider: JsonRpcProvider
  let redis: Redis

  beforeAll(() => {
    ;({ chain, provider, redis } = testChain)
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
    // The handler's error is the cause, so its kind decides how the failure is reported.
    expect(errors[0]?.message).toMatch(/^handler failed for request 0x/)
    expect(rootCauseFirst(errors[0])).toMatch(/^queue unavailable; handler failed for request/)
    expect(listener.checkpoint).toBe(request!.blockNumber - 1)
    await listener.poll()
    await listener.poll()
    expect(seen).toEqual([request!.requestId, request!.requestId])
    expect(listener.checkpoint).toBe(await head())
  })

  it('a log whose marker was written after Redis lost its state comes again when read again', async () => {
    const prefix = uniquePrefix('listener')
    const tagKey = `${prefix}:generation`
    await redis.set(tagKey, 'generation-1')
    const seen: string[] = []
    const { listener } = listen({
      prefix,
      fromBlock: (await head()) + 1,
      consumedTagKey: tagKey,
      onRequest: async (event) => {
        seen.push(event.requestId)
        // Redis loses its state while the handler runs: its run record and job went, the marker
        // is written after (seed 2047 of the fault search).
        if (seen.length === 1) await redis.del(tagKey)
      },
    })
    const [request] = await makeRequests(chain, 1)
    await listener.poll()
    expect(seen).toEqual([request!.requestId])
    // The rebuild adopts a new generation and reads the chain again: the log comes again.
    await redis.set(tagKey, 'generation-2')
    await listener.rewind(request!.blockNumber)
    await listener.poll()
    expect(seen).toEqual([request!.requestId, request!.requestId])
    // Its marker now carries the generation in force: read again, it is consumed.
    await listener.rewind(request!.blockNumber)
    await listener.poll()
    expect(seen).toHaveLength(2)
    expect(listener.stats.skippedAsConsumed).toBe(1)
  })

  it('writes no marker while the generation is gone: the rebuild decides', async () => {
    const prefix = uniquePrefix('listener')
    const tagKey = `${prefix}:generation`
    const seen: string[] = []
    const { listener } = listen({
      prefix,
      fromBlock: (await head()) + 1,
      consumedTagKey: tagKey,
      onRequest: (event) => void seen.push(event.requestId),
    })
    const [request] = await makeRequests(chain, 1)
    await listener.poll()
    await redis.set(tagKey, 'generation-1')
    await listener.rewind(request!.blockNumber)
    await listener.poll()
    expect(seen).toEqual([request!.requestId, request!.requestId])
  })

  it('counts a reorg under its checkpoint, which the reconciler reads', async () => {
    const prefix = uniquePrefix('listener')
    const { listener } = listen({ prefix, fromBlock: (await head()) + 1 })
    const reorg = await testChain.markForReorg()
    await rpc(provider, 'anvil_mine', ['0x2'])
    await listener.poll()
    expect(listener.stats.reorgs).toBe(0)
    // Other blocks under the checkpoint.
    await reorg(3)
    await listener.poll()
    expect(listener.stats.reorgs).toBe(1)
  })
})
