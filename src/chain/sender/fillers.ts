import { randomUUID } from 'node:crypto'
import { FeedrunnerError } from '../../config/errors.ts'
import type { Confirmer } from './confirmer.ts'
import { feesAbove } from './fee-policy.ts'
import { errorText, FILLER_ID_PREFIX, fillerTx, type Head } from './model.ts'
import type { KeyCounters } from './types.ts'
import type { SenderNode } from './node-client.ts'
import type { SignAttempt } from './signing.ts'
import type { TxAttempt, TxStore } from './tx-store.ts'

/** The job that held a nonce, and what it signed for it. */
export interface NonceHolder {
  jobId: string
  attempts: readonly TxAttempt[]
}

export interface FillerParts {
  address: string
  node: Pick<SenderNode, 'currentFees' | 'broadcast'>
  sign: SignAttempt
  store: TxStore
  confirmer: Confirmer
  bumpAfterBlocks: number
  counters: KeyCounters
  /** The fence this process owns the key under; undefined when it does not own it. */
  fence: () => string | undefined
  /** Called once a filler was broadcast (its receipt may be there now). */
  onBroadcast: () => void
  reportError: (error: Error) => void
}

/**
 * A key's nonce-gap repair, run by the key's owner: fillers for nonces whose transaction can never be
 * mined. The owner watches every transaction of the key that is not final (its own, and those it
 * recovered from Redis when it took the key), so a nonce below the lowest one watched that nobody
 * watches is a hole nobody will fill but a filler.
 */
export class Fillers {
  /** The block of the last look for nonces nobody is waiting for (see fillHoles). */
  private holeCheckBlock = Number.NEGATIVE_INFINITY

  constructor(private readonly parts: FillerParts) {}

  /** Spends a refused transaction's nonce on a filler: the error the job fails with. */
  async refusedForGood(
    job: { jobId: string; nonce: number; attempts: TxAttempt[] },
    error: unknown,
  ): Promise<FeedrunnerError> {
    const words = errorText(error).trim()
    const filled = await this.fillNonce(job.nonce, job)
    const spent = filled
      ? `; its nonce ${job.nonce} went to a filler transaction, so the key's later transactions are not held back`
      : ''
    // No cause: the node's words are in the message already, right after what they mean.
    return new FeedrunnerError(`the node refused the transaction for good: ${words}${spent}`, {
      kind: 'node_refused',
      retryable: false,
    })
  }

  /**
   * Spends `nonce` on a filler (a zero-value transfer to the key itself) once the transaction that
   * held it can never be mined, priced above anything its holder put in the node's pool. False when
   * the nonce is not to be had: its holder moved on, or the key is not this process's any more. A
   * filler the node refuses stays recorded and watched: the stalled key bumps it.
   */
  async fillNonce(nonce: number, holder?: NonceHolder): Promise<boolean> {
    const { address, store, confirmer } = this.parts
    const fence = this.parts.fence()
    if (fence === undefined) return false
    const fillerId = `${FILLER_ID_PREFIX}${nonce}-${randomUUID()}`
    const claim = { fillerId, nonce, holderJobId: holder?.jobId }
    if (!(await store.claimForFiller(address, fence, claim))) return false
    const tx = fillerTx(address)
    const fees = feesAbove(holder?.attempts.at(-1), await this.parts.node.currentFees())
    const attempt = await this.parts.sign(tx, nonce, fees, true)
    if (!(await store.storeAttempts(address, fence, { jobId: fillerId, nonce }, [attempt])))
      return false
    this.parts.counters.filled += 1
    // Watched in place of its holder: a run still waiting for the holder is told at once.
    confirmer.watch(nonce, fillerId, tx, [attempt])
    await this.parts.node
      .broadcast(attempt.raw)
      .catch((error: unknown) =>
        this.parts.reportError(
          new Error(
            `the filler for nonce ${nonce} of ${address} was refused: ${errorText(error).trim()}`,
          ),
        ),
      )
    this.parts.onBroadcast()
    return true
  }

  /**
   * A stalled key whose lowest unmined nonce nobody watches has holes: nonces whose job failed for
   * good or whose record is gone. Those up to the lowest nonce watched go to fillers.
   */
  async fillHoles(current: Head, latest: number): Promise<void> {
    const { confirmer, bumpAfterBlocks, store, address } = this.parts
    const waited = [...confirmer.pending.keys()].filter((nonce) => nonce >= latest)
    if (waited.length === 0 || confirmer.pending.has(latest)) return
    if (
      current.number - confirmer.progressBlock < bumpAfterBlocks ||
      current.number - this.holeCheckBlock < bumpAfterBlocks
    )
      return
    this.holeCheckBlock = current.number
    const lowestWaited = Math.min(...waited)
    const holders = (await store.inflight(address)).filter(
      (entry) => entry.nonce >= latest && entry.nonce < lowestWaited,
    )
    for (let nonce = latest; nonce < lowestWaited; nonce++) {
      const holder = holders.find((entry) => entry.nonce === nonce)
      const record = holder && (await store.loadBound(address, holder.jobId, nonce))
      const attempts = record?.attempts ?? []
      if (!(await this.fillNonce(nonce, holder && { jobId: holder.jobId, attempts }))) return
    }
  }
}
