import type { JsonRpcProvider } from 'ethers'
import { describe, expect, it } from 'vitest'
import type { TxResult, TxSender, TxSubmission } from '../../src/chain/sender/index.ts'
import { RequestRefusedError } from '../../src/runner/admission.ts'
import { CANCEL_ORACLE_REQUEST_TOPIC } from '../../src/chain/operator.ts'
import {
  RequestCancelledError,
  RequestNotOnChainError,
  senderChainAccess,
} from '../../src/runner/sender-chain-access.ts'

/** A sender that records what it is given and answers every submission as mined (or `answer`). */
function recordingSender(chain: { time?: number; bound?: boolean; answer?: TxResult } = {}): {
  sender: TxSender
  submissions: TxSubmission[]
} {
  const submissions: TxSubmission[] = []
  const sender: TxSender = {
    start: async () => undefined,
    submit: async (submission) => {
      submissions.push(submission)
      if (chain.answer) return chain.answer
      return {
        status: 'mined',
        txHash: `0x${'1'.repeat(64)}`,
        blockNumber: 1,
        nonce: 0,
        from: `0x${'2'.repeat(40)}`,
      }
    },
    addresses: [],
    stats: () => [],
    ownership: () => ({ available: 1, owned: 1, lostLeases: 0 }),
    onOwnershipChange: () => undefined,
    balances: async () => [],
    chainTime: async () => chain.time ?? 0,
    bound: async () => chain.bound ?? false,
    close: async () => undefined,
  }
  return { sender, submissions }
}

const tx = { to: `0x${'3'.repeat(40)}`, data: '0x01', idempotencyKey: 'run:submit' }
const REQUEST = {
  operator: `0x${'4'.repeat(40)}`,
  requestId: `0x${'5'.repeat(64)}`,
  blockNumber: 1,
}

describe('senderChainAccess', () => {
  it("hands the task's signal to the sender, so its wait ends with the task", async () => {
    const { sender, submissions } = recordingSender()
    const stop = new AbortController()
    await senderChainAccess(sender, {} as JsonRpcProvider, REQUEST).sendTransaction({
      ...tx,
      signal: stop.signal,
    })
    expect(submissions[0]?.signal).toBe(stop.signal)
  })

  it('submits without waiting for the run record to say sent', async () => {
    const { sender, submissions } = recordingSender()
    let marked = false
    // Resolves only once the sender has the submission: a mark written before submitting never would.
    const onSubmit = async (): Promise<void> => {
      while (submissions.length === 0) await new Promise((resolve) => setImmediate(resolve))
      marked = true
    }
    const outcome = await senderChainAccess(sender, {} as JsonRpcProvider, REQUEST, {
      onSubmit,
    }).sendTransaction(tx)
    expect(outcome.status).toBe('confirmed')
    expect(marked).toBe(true)
  })

  it('signs no new fulfilment for an open request past its cancelExpiration: the run is refused', async () => {
    const { sender, submissions } = recordingSender({ time: 1_000, bound: false })
    // The Operator's logs hold no answer and no cancel for it: it is open.
    const noLogs = { getBlockNumber: async () => 10, getLogs: async () => [] }
    const access = senderChainAccess(sender, noLogs as unknown as JsonRpcProvider, {
      ...REQUEST,
      cancelExpiration: 1_000n,
    })
    const refusal = await access.sendTransaction(tx).catch((error: unknown) => error)
    expect(refusal).toBeInstanceOf(RequestRefusedError)
    expect((refusal as RequestRefusedError).code).toBe('expired')
    expect(submissions).toHaveLength(0)
  })

  it('ends a run cancelled, not answered by the cancel, when its requester cancelled it past its cancelExpiration', async () => {
    const { sender, submissions } = recordingSender({ time: 1_000, bound: false })
    // The Operator's logs hold the requester's cancel (a cancel may be mined before the listener,
    // waiting for its confirmations, has told the run record).
    const cancelTx = `0x${'6'.repeat(64)}`
    const cancelled = {
      getBlockNumber: async () => 10,
      getLogs: async () => [
        { topics: [CANCEL_ORACLE_REQUEST_TOPIC, REQUEST.requestId], transactionHash: cancelTx },
      ],
    }
    const access = senderChainAccess(sender, cancelled as unknown as JsonRpcProvider, {
      ...REQUEST,
      cancelExpiration: 1_000n,
    })
    const failure = await access.sendTransaction(tx).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(RequestCancelledError)
    expect((failure as RequestCancelledError).txHash).toBe(cancelTx)
    expect(submissions).toHaveLength(0)
  })

  it('resumes a transaction the run had out before, whatever the time: it may be mined', async () => {
    const { sender, submissions } = recordingSender({ time: 5_000, bound: true })
    const access = senderChainAccess(sender, {} as JsonRpcProvider, {
      ...REQUEST,
      cancelExpiration: 1_000n,
    })
    expect((await access.sendTransaction(tx)).status).toBe('confirmed')
    expect(submissions).toHaveLength(1)
  })

  it('does not call a run fulfilled when the Operator knows the request no more and nothing answered it', async () => {
    // Seed 2146 of the fault search: a reorg dropped the request, whose run then simulated its
    // fulfilment; the run was recorded fulfilled, and the request, mined again, stayed open.
    const { sender } = recordingSender({
      answer: { status: 'already-fulfilled', reason: 'Must have a valid requestId' },
    })
    const noLogs = { getBlockNumber: async () => 10, getLogs: async () => [] }
    const access = senderChainAccess(sender, noLogs as unknown as JsonRpcProvider, REQUEST)
    const failure = await access.sendTransaction(tx).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(RequestNotOnChainError)
    expect(failure).toMatchObject({ kind: 'upstream', retryable: true })
    expect((failure as Error).message).toContain(REQUEST.requestId)
  })
})
