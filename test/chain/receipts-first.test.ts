import { describe, expect, it } from 'vitest'
import type { PendingTx } from '../../src/chain/sender/pending-tx.ts'
import type { Head } from '../../src/chain/sender/model.ts'
import {
  DIRECT_RECEIPT_READS_MAX,
  dueForDirectReads,
  type DirectLookState,
} from '../../src/chain/sender/receipts-first.ts'

/** When a look may go to the receipts without the key's nonce count, and when the count decides. */
describe('receipts first: what only the key nonce count can tell', () => {
  const current: Head = { number: 100, hash: '0x64', baseFee: null, timestamp: 0 }

  function entry(nonce: number, sentAtBlock: number, mined = false): PendingTx {
    return {
      nonce,
      jobId: `job-${nonce}`,
      tx: { to: '0x', data: '0x', gasLimit: 21_000, value: 0n },
      attempts: [],
      sentAtBlock,
      sentAt: 0,
      misses: 0,
      bumping: false,
      waiters: [],
      ...(mined
        ? {
            receipt: { transactionHash: '0x', blockNumber: '0x63', blockHash: '0x', status: '0x1' },
          }
        : {}),
    }
  }

  const state = (pending: PendingTx[], rest: Partial<DirectLookState> = {}): DirectLookState => ({
    pending,
    current,
    minedNonce: 5,
    stalled: false,
    bumpAfterBlocks: 3,
    ...rest,
  })
  const nonces = (due: PendingTx[] | undefined) => due?.map((pending) => pending.nonce)

  it('reads those sent before the head, lowest nonce first, and none sent at it', () => {
    const due = dueForDirectReads(state([entry(7, 99), entry(5, 99), entry(6, 98), entry(8, 100)]))
    expect(nonces(due)).toEqual([5, 6, 7])
  })

  it('leaves mined ones (waiting for confirmations) out, and reads nothing when all are mined', () => {
    const mined = state([entry(5, 98, true), entry(6, 99)], { minedNonce: 6 })
    expect(nonces(dueForDirectReads(mined))).toEqual([6])
    expect(dueForDirectReads(state([entry(5, 98, true)]))).toEqual([])
  })

  it('asks for the count first when a nonce below the lowest in flight is not known mined (a hole)', () => {
    expect(dueForDirectReads(state([entry(6, 99)]))).toBeUndefined()
    expect(dueForDirectReads(state([entry(0, 99)], { minedNonce: -1 }))).toBeUndefined()
  })

  it('asks for the count when the key stood still for the resend time', () => {
    expect(dueForDirectReads(state([entry(5, 99)], { stalled: true }))).toBeUndefined()
  })

  it('asks for the count once one has waited bumpAfterBlocks, whatever that is set to', () => {
    expect(nonces(dueForDirectReads(state([entry(5, 98)])))).toEqual([5])
    expect(dueForDirectReads(state([entry(5, 97)]))).toBeUndefined()
    expect(dueForDirectReads(state([entry(5, 99)], { bumpAfterBlocks: 1 }))).toBeUndefined()
  })

  it('asks for the count when more are due than it reads directly', () => {
    const many = Array.from({ length: DIRECT_RECEIPT_READS_MAX + 1 }, (_, at) => entry(5 + at, 99))
    expect(dueForDirectReads(state(many))).toBeUndefined()
    expect(dueForDirectReads(state(many.slice(1), { minedNonce: 6 }))?.length).toBe(
      DIRECT_RECEIPT_READS_MAX,
    )
  })
})
