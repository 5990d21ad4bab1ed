import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  Confirmer,
  type ConfirmerSettings,
  type StuckHandlers,
} from '../../src/chain/sender/confirmer.ts'
import {
  HandedOverError,
  NonceTakenError,
  type Head,
  type UnsignedTx,
} from '../../src/chain/sender/model.ts'
import { settlesWithin } from '../support/settles-within.ts'

const ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const TX: UnsignedTx = { to: ADDRESS, data: '0x', gasLimit: 21_000, value: 0n }
const attempt = { hash: '0x01', raw: '0x02', maxFeePerGas: '2', maxPriorityFeePerGas: '1' }

type ConfirmerNode = ConstructorParameters<typeof Confirmer>[1]

/** A confirmer of ADDRESS on `node`: every handler idle but those given, one confirmation. */
function confirmerOn(
  node: ConfirmerNode,
  handlers: Partial<StuckHandlers> = {},
  settings: Partial<ConfirmerSettings> = {},
): Confirmer {
  const idle = async () => undefined
  return new Confirmer(
    ADDRESS,
    node,
    {
      confirmations: 1,
      bumpAfterBlocks: 1_000,
      resendAfterMs: 5_000,
      finalityDepth: 50,
      ...settings,
    },
    { bump: idle, fillHoles: idle, resend: idle, final: idle, reorgedOut: idle, ...handlers },
  )
}

/** A confirmer that is never asked to look at the chain here: these cases need no node. */
function confirmer(): Confirmer {
  const send = () => Promise.reject(new Error('no node in this test'))
  return confirmerOn(
    { send, head: undefined, secondsPerBlock: () => 0 },
    {},
    { bumpAfterBlocks: 3 },
  )
}

const outcome = (waiting: Promise<unknown>) =>
  settlesWithin(
    waiting.then(
      () => 'resolved',
      (error: Error) => error.name,
    ),
    1_000,
  )

describe('confirmer: every waiter settles', () => {
  it('a different job at a watched nonce takes it over, and the earlier job is told at once', async () => {
    const watching = confirmer()
    const earlier = watching.track(5, 'job-a', TX, [attempt])
    watching.watch(5, 'filler-5', TX, [attempt])
    expect(await outcome(earlier)).toBe(NonceTakenError.name)
    expect(watching.pending.get(5)?.jobId).toBe('filler-5')
  })

  it('a second run of the same job joins the first watch instead of replacing it', async () => {
    const watching = confirmer()
    const first = watching.track(6, 'job-b', TX, [attempt])
    const second = watching.track(6, 'job-b', TX, [attempt, { ...attempt, hash: '0x03' }])
    expect(watching.pending.get(6)?.waiters).toHaveLength(2)
    expect(watching.pending.get(6)?.attempts).toHaveLength(2)
    watching.handOver(new HandedOverError('closing'))
    expect(await outcome(first)).toBe(HandedOverError.name)
    expect(await outcome(second)).toBe(HandedOverError.name)
    expect(watching.pending.size).toBe(0)
  })
})

describe('confirmer: a resend waits for the chain to have had its chance', () => {
  const head = (number: number, timestamp: number): Head => ({
    number,
    hash: `0x${number.toString(16)}`,
    parentHash: `0x${(number - 1).toString(16)}`,
    baseFee: null,
    timestamp,
  })

  /**
   * A key whose transaction at nonce 5 the chain never mines, on a chain of `secondsPerBlock` (as
   * the endpoint pool knows it from the heads the listener read before); what it resends, by the
   * test's clock.
   */
  function stuckAtFive(secondsPerBlock: number): { confirmer: Confirmer; resent: number[] } {
    const resent: number[] = []
    const node = {
      send: async <T>(method: string): Promise<T> =>
        (method === 'eth_getTransactionCount' ? '0x5' : null) as T,
      head: undefined,
      secondsPerBlock: () => secondsPerBlock,
    }
    const confirmer = confirmerOn(node, {
      resend: async (entries) => void resent.push(...entries.map((entry) => entry.nonce)),
    })
    void confirmer.track(5, 'job-5', TX, [attempt]).catch(() => undefined)
    return { confirmer, resent }
  }

  afterEach(() => vi.useRealTimers())

  it('on 12 s blocks, not after 5 s but after two blocks passed without it', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 0 })
    const { confirmer, resent } = stuckAtFive(12)
    await confirmer.check(head(100, 1_000))
    // The first block after the key's first transaction: no block came yet, and none is due.
    vi.setSystemTime(6_000)
    await confirmer.check(head(100, 1_000))
    expect(resent).toEqual([])
    vi.setSystemTime(12_000)
    await confirmer.check(head(101, 1_012))
    expect(resent).toEqual([])
    vi.setSystemTime(18_000)
    await confirmer.check(head(102, 1_024))
    expect(resent).toEqual([])
    vi.setSystemTime(25_000)
    await confirmer.check(head(102, 1_024))
    expect(resent).toEqual([5])
  })

  it('on 1 s blocks, after resendAfterMs', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 0 })
    const { confirmer, resent } = stuckAtFive(1)
    for (let second = 0; second <= 6; second++) {
      vi.setSystemTime(second * 1_000)
      await confirmer.check(head(100 + second, 1_000 + second))
    }
    expect(resent).toEqual([5])
  })
})

describe('confirmer: a receipt read above the head, then a reorg', () => {
  /**
   * The key's transaction at nonce 5 is mined in block 11 while the confirmer looks at head 10
   * (one confirmation: not deep enough yet), then a reorg takes block 11 away and the chain stays
   * quiet at a new block 10: no block 11 comes to confirm or refute the receipt read.
   */
  it('sends the transaction again as one a reorg took away, and its run keeps waiting', async () => {
    const chain = { count: 6, receipt: true }
    const reorged: number[] = []
    const node = {
      send: async <T>(method: string): Promise<T> => {
        if (method === 'eth_getTransactionCount') return `0x${chain.count.toString(16)}` as T
        const receipt = {
          transactionHash: '0x01',
          blockNumber: '0xb',
          blockHash: '0xb1',
          status: '0x1',
        }
        return (chain.receipt ? receipt : null) as T
      },
      head: undefined,
      secondsPerBlock: () => 1,
    }
    const watching = confirmerOn(
      node,
      {
        reorgedOut: async (entries) =>
          void reorged.push(...entries.map(({ entry }) => entry.nonce)),
      },
      { resendAfterMs: 600_000 },
    )
    const run = watching.track(5, 'job-5', TX, [attempt])
    const before: Head = {
      number: 10,
      hash: '0xa0',
      parentHash: '0x90',
      baseFee: null,
      timestamp: 1,
    }
    await watching.check(before)
    expect(watching.pending.get(5)?.receipt?.blockNumber).toBe('0xb')
    Object.assign(chain, { count: 5, receipt: false })
    const after: Head = { ...before, hash: '0xa1' }
    for (let look = 0; look < 3; look++) await watching.check(after)
    expect(reorged).toEqual([5])
    expect(watching.pending.get(5)?.receipt).toBeUndefined()
    // Nothing settles it here: a run told anything would be a run that stopped waiting.
    const told = run.then(
      () => 'resolved',
      () => 'rejected',
    )
    expect(await settlesWithin(told, 100)).toBe('timed out')
  })
})
