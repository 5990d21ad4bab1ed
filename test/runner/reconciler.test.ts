import { Redis } from 'ioredis'
import { JsonRpcProvider, type Filter, type FilterByBlockHash, type Log } from 'ethers'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { createTxSender } from '../../src/chain/sender/index.ts'
import {
  createReconciler,
  type Reconciler,
  type ReconcilerOptions,
} from '../../src/runner/recovery/reconciler.ts'
import { RunStore } from '../../src/runner/run-record.ts'
import { RedisClock } from '../../src/queue/redis-clock.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  fulfilUint256,
  makeRequests,
  rpc,
  startTestChain,
  type TestChain,
} from '../chain/support.ts'

/** The node's provider, telling every eth_getLogs block range it is asked for. */
class RangeRecordingProvider extends JsonRpcProvider {
  readonly ranges: Array<[number, number]> = []
  override async getLogs(filter: Filter | FilterByBlockHash): Promise<Log[]> {
    const { fromBlock, toBlock } = filter as Filter
    this.ranges.push([Number(fromBlock), Number(toBlock)])
    return super.getLogs(filter)
  }
}

/**
 * The reconciler checks every run that is not settled, the newest included, past the first thousand
 * of a day, and reads the Operator's logs in bounded block ranges.
 */
describe('reconciler: every unsettled run, newest included, logs in bounded ranges', () => {
  let chain: TestChain
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('reconciler')
  let provider: RangeRecordingProvider
  /** Redis's clock, as a runner reads it: the runs' times are Redis's. */
  const clock = new RedisClock(redis, { slotKey: prefix })

  beforeAll(async () => {
    expect(await clock.sync()).toBe(true)
    chain = await startTestChain()
    provider = new RangeRecordingProvider(chain.anvil.rpcUrl, chain.dev.chainId, {
      staticNetwork: true,
      cacheTimeout: -1,
    })
  })
  /** Answers `request` on chain from a sender of its own, as a runner's would. */
  const fulfil = async (request: Awaited<ReturnType<typeof makeRequests>>[number]) => {
    const sender = createTxSender({
      rpcUrl: chain.anvil.rpcUrl,
      chainId: chain.dev.chainId,
      keys: [ANVIL_PRIVATE_KEYS[1]!],
      redisUrl: testRedisUrl(),
      prefix,
      pollIntervalMs: 20,
    })
    await sender.start()
    try {
      return await sender.submit({
        to: chain.dev.addresses.operator,
        data: fulfilUint256(request, 7n),
        idempotencyKey: request.requestId,
      })
    } finally {
      await sender.close()
    }
  }

  /** A reconciler of `runs` on the test chain that looks at every run at once (no settle time). */
  const reconcilerOf = (runs: RunStore, options: Partial<ReconcilerOptions>) =>
    createReconciler({
      runs,
      clock,
      provider,
      operators: [chain.dev.addresses.operator],
      log: pino({ level: 'silent' }),
      everyMs: 60_000,
      settleMs: 0,
      ...options,
    })

  /**
   * One pass on a clock read just before it, as a runner's is read again every few seconds. The
   * clock puts Redis's reading at the middle of the call that read it, so a reading taken long ago
   * by a slow call (a loaded machine) can be behind Redis by up to half that call: a run written a
   * moment before would then look newer than the pass's "now", which settleMs 0 compares exactly.
   */
  const passOf = async (reconciler: Reconciler) => {
    expect(await clock.sync()).toBe(true)
    return reconciler.pass()
  }

  afterAll(async () => {
    provider.destroy()
    await chain?.stop()
    const keys = await redis.keys(`${prefix}:*`)
    for (let at = 0; at < keys.length; at += 1_000) await redis.del(...keys.slice(at, at + 1_000))
    redis.disconnect()
  })

  it('settles the newest run of 1,200 that the chain shows fulfilled, and one it shows cancelled', async () => {
    const runs = new RunStore(redis, `${prefix}:runner`, chain.dev.chainId)
    const [answered, cancelled] = await makeRequests(chain, 2)
    const fulfilment = await fulfil(answered!)
    await rpc(chain.dev.provider, 'evm_increaseTime', [301])
    await rpc(chain.dev.provider, 'evm_mine')
    await (
      await chain.dev.consumer.getFunction('cancelRequest')(
        cancelled!.requestId,
        cancelled!.cancelExpiration,
      )
    ).wait()
    // A day's worth of older runs first (settled ones), then the two the sender saw fail, newest last.
    const run = (state: 'fulfilled' | 'errored') => ({
      state,
      chainId: chain.dev.chainId,
      blockNumber: answered!.blockNumber,
      reason: state === 'errored' ? 'the node did not answer' : undefined,
    })
    for (let index = 0; index < 1_200; index++)
      await runs.create(`0x${index.toString(16).padStart(64, '0')}`, run('fulfilled'))
    await runs.create(cancelled!.requestId, run('errored'))
    await runs.create(answered!.requestId, run('errored'))
    // Many blocks between the request and the head: the log reads come in ranges.
    await rpc(chain.dev.provider, 'anvil_mine', ['0x1f4'])

    const reconciler = reconcilerOf(runs, { logRangeBlocks: 100, pageSize: 250 })
    expect(await passOf(reconciler)).toMatchObject({ settled: 2 })
    expect(await runs.get(answered!.requestId)).toMatchObject({
      state: 'fulfilled',
      txHash: fulfilment.txHash,
    })
    expect((await runs.get(cancelled!.requestId))?.state).toBe('cancelled')
    expect(provider.ranges.length).toBeGreaterThan(1)
    for (const [from, to] of provider.ranges) expect(to - from + 1).toBeLessThanOrEqual(100)
  }, 120_000)

  it('settles a run written by a host whose clock runs 45 s ahead, in the first pass after it', async () => {
    // Chaos seed 1194350547 (a `feedrunner start` 45 s ahead): its runs' times were its own clock's,
    // so a reconciler on a true clock took each for written "just now" for 45 s, and left it to the
    // run still on it. The times are Redis's now, whoever writes them.
    const runs = new RunStore(redis, `${prefix}:ahead`, chain.dev.chainId)
    const [request] = await makeRequests(chain, 1)
    const fulfilment = await fulfil(request!)
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      vi.setSystemTime(Date.now() + 45_000)
      await runs.create(request!.requestId, {
        state: 'errored',
        chainId: chain.dev.chainId,
        blockNumber: request!.blockNumber,
        reason: 'the node did not answer',
      })
    } finally {
      vi.useRealTimers()
    }
    const written = (await runs.get(request!.requestId))?.times.errored ?? 0
    expect(Math.abs(written - clock.now()!)).toBeLessThan(10_000)
    expect(await passOf(reconcilerOf(runs, { settleMs: 0 }))).toMatchObject({ settled: 1 })
    expect(await runs.get(request!.requestId)).toMatchObject({
      state: 'fulfilled',
      txHash: fulfilment.txHash,
    })
  }, 120_000)

  it('settles a run refused lately that the chain shows answered, and leaves one refused long ago', async () => {
    // A run refused for its expiry while the fulfilment its process had sent was still in the
    // node's pool, unknown to the sender after Redis lost its state: mined after the refusal.
    const runs = new RunStore(redis, `${prefix}:refused`, chain.dev.chainId)
    const [request] = await makeRequests(chain, 1)
    const fulfilment = await fulfil(request!)
    const refused = {
      state: 'refused' as const,
      chainId: chain.dev.chainId,
      blockNumber: request!.blockNumber,
      reason: 'the request passed its cancelExpiration',
    }
    await runs.create(request!.requestId, refused)
    const reconciler = (endedWatchMs: number) => reconcilerOf(runs, { endedWatchMs })
    // Refused longer ago than the watch: not looked at, left as it is.
    expect(await passOf(reconciler(0))).toMatchObject({ settled: 0 })
    expect((await runs.get(request!.requestId))?.state).toBe('refused')
    // Refused within it: the chain's answer wins.
    expect(await passOf(reconciler(600_000))).toMatchObject({ settled: 1 })
    expect(await runs.get(request!.requestId)).toMatchObject({
      state: 'fulfilled',
      txHash: fulfilment.txHash,
    })
  }, 120_000)

  it('makes a run fulfilled lately by a transaction the chain does not show name the one it does', async () => {
    // Seed 2134 of the fault search: the reconciler had settled the run from a fulfilment a reorg
    // then took away; after a Redis restart another run answered the request with a new transaction.
    const runs = new RunStore(redis, `${prefix}:fulfilled`, chain.dev.chainId)
    const [request, answeredAsRecorded] = await makeRequests(chain, 2)
    const fulfilment = await fulfil(request!)
    const asRecorded = await fulfil(answeredAsRecorded!)
    const base = { state: 'fulfilled' as const, chainId: chain.dev.chainId }
    const gone = `0x${'5053'.repeat(16)}`
    await runs.create(request!.requestId, {
      ...base,
      blockNumber: request!.blockNumber,
      txHash: gone,
    })
    await runs.create(answeredAsRecorded!.requestId, {
      ...base,
      blockNumber: answeredAsRecorded!.blockNumber,
      txHash: asRecorded.txHash,
    })
    const reconciler = (endedWatchMs: number) => reconcilerOf(runs, { endedWatchMs })
    // Fulfilled longer ago than the watch: not looked at.
    expect(await passOf(reconciler(0))).toMatchObject({ settled: 0 })
    expect((await runs.get(request!.requestId))?.txHash).toBe(gone)
    // With the listener's reorg count: not looked at until a reorg was seen.
    let reorgs = 0
    const afterReorgs = reconcilerOf(runs, { endedWatchMs: 600_000, reorgs: () => reorgs })
    expect(await passOf(afterReorgs)).toMatchObject({ settled: 0 })
    expect((await runs.get(request!.requestId))?.txHash).toBe(gone)
    reorgs = 1
    // Within it, once a reorg was seen: the chain's transaction wins, and a record that agrees
    // is not written.
    expect(await passOf(afterReorgs)).toMatchObject({ settled: 1 })
    expect(await runs.get(request!.requestId)).toMatchObject({
      state: 'fulfilled',
      txHash: fulfilment.txHash,
    })
    expect((await runs.get(answeredAsRecorded!.requestId))?.reason).toBeUndefined()
  }, 120_000)
})
