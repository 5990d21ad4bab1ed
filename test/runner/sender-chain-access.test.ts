import type { JsonRpcProvider } from 'ethers'
import { describe, expect, it } from 'vitest'
import type { TxSender, TxSubmission } from '../../src/chain/sender/index.ts'
import { senderChainAccess } from '../../src/runner/sender-chain-access.ts'

/** A sender that records what it is given and answers every submission as mined. */
function recordingSender(): { sender: TxSender; submissions: TxSubmission[] } {
  const submissions: TxSubmission[] = []
  const sender: TxSender = {
    start: async () => undefined,
    submit: async (submission) => {
      submissions.push(submission)
      return {
        status: 'mined',
        txHash: `0x${'1'.repeat(64)}`,
        blockNumber: 1,
        nonce: 0,
        from: `0x${'2'.repeat(40)}`,
      }
    },
    addresses: [],
    queueNames: [],
    stats: () => [],
    resyncNonces: async () => undefined,
    balances: async () => [],
    close: async () => undefined,
  }
  return { sender, submissions }
}

const tx = { to: `0x${'3'.repeat(40)}`, data: '0x01', idempotencyKey: 'run:submit' }

describe('senderChainAccess', () => {
  it('simulates only what the ethtx asks to, or every transaction of a retried run', async () => {
    const { sender, submissions } = recordingSender()
    const provider = {} as JsonRpcProvider
    await senderChainAccess(sender, provider).sendTransaction(tx)
    await senderChainAccess(sender, provider).sendTransaction({ ...tx, simulate: true })
    await senderChainAccess(sender, provider, undefined, { retried: true }).sendTransaction(tx)
    expect(submissions.map((submission) => submission.simulate)).toEqual([false, true, true])
  })

  it('asks the sender to run a failed earlier job again only for a retried run', async () => {
    const { sender, submissions } = recordingSender()
    const provider = {} as JsonRpcProvider
    await senderChainAccess(sender, provider).sendTransaction({ ...tx, simulate: true })
    await senderChainAccess(sender, provider, undefined, { retried: true }).sendTransaction(tx)
    expect(submissions.map((submission) => submission.resubmit)).toEqual([false, true])
  })

  it('submits without waiting for the run record to say sent', async () => {
    const { sender, submissions } = recordingSender()
    let marked = false
    // Resolves only once the sender has the submission: a mark written before submitting never would.
    const onSubmit = async (): Promise<void> => {
      while (submissions.length === 0) await new Promise((resolve) => setImmediate(resolve))
      marked = true
    }
    const outcome = await senderChainAccess(
      sender,
      {} as JsonRpcProvider,
      onSubmit,
    ).sendTransaction(tx)
    expect(outcome.status).toBe('confirmed')
    expect(marked).toBe(true)
  })
})
