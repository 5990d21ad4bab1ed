import { randomUUID } from 'node:crypto'
import type { Confirmer } from './confirmer.ts'
import { feesAbove } from './fee-policy.ts'
import {
  errorText,
  FILLER_ID_PREFIX,
  fillerTx,
  NonceTakenError,
  type Head,
  type KeyCounters,
} from './model.ts'
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
  /** A job that will still send or watch its transaction (queued, retrying or running anywhere). */
  isJobLive: (jobId: string) => Promise<boolean>
  /** Called once a filler was broadcast (its receipt may be there now). */
  onBroadcast: () => void
  reportError: (error: Error) => void
}

/** A key's nonce-gap repair: fillers for nonces whose transaction can never be mined. */
export class Fillers {
  /** The block of the last look for nonces nobody is waiting for (see fillHoles). */
  private holeCheckBlock = Number.NEGATIVE_INFINITY

  constructor(private readonly parts: FillerParts) {}

  /**
   * Spends `nonce` on a filler (a zero-value transfer to the key itself) once the transaction that
   * held it can never be mined, priced above anything its holder put in the node's pool. False when
   * the nonce is not to be had: its holder moved on, or another process filled it first. A filler
   * the node refuses stays recorded and tracked: the stalled key bumps it, a restart sends it again.
   */
  async fillNonce(nonce: number, holder?: NonceHolder): Promise<boolean> {
    const { address, store, confirmer } = this.parts
    const fillerId = `${FILLER_ID_PREFIX}${nonce}-${randomUUID()}`
    if (!(await store.claimForFiller(fillerId, nonce, holder?.jobId))) return false
    const tx = fillerTx(address)
    const fees = feesAbove(holder?.attempts.at(-1), await this.parts.node.currentFees())
    const attempt = await this.parts.sign(tx, nonce, fees, true)
    await store.addAttempt(fillerId, [attempt])
    this.parts.counters.filled += 1
    if (!confirmer.pending.has(nonce)) {
      confirmer
        .track(nonce, fillerId, tx, [attempt])
        .then(
          () => store.settle(fillerId),
          (error: unknown) =>
            error instanceof NonceTakenError ? store.forget(fillerId) : undefined,
        )
        .catch(this.parts.reportError)
    }
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
   * A stalled key whose lowest unmined nonce nobody here waits for may have holes: nonces whose job
   * failed for good (its transaction refused, or never sent) or whose record is gone. Those up to
   * the lowest nonce waited for go to fillers. A nonce whose job is queued, retrying or running (in
   * any process) is left to that job, which bumps it when the key stalls.
   */
  async fillHoles(current: Head, latest: number): Promise<void> {
    const { confirmer, bumpAfterBlocks, store } = this.parts
    const waited = [...confirmer.pending.keys()].filter((nonce) => nonce >= latest)
    if (waited.length === 0 || confirmer.pending.has(latest)) return
    if (
      current.number - confirmer.progressBlock < bumpAfterBlocks ||
      current.number - this.holeCheckBlock < bumpAfterBlocks
    )
      return
    this.holeCheckBlock = current.number
    const lowestWaited = Math.min(...waited)
    const holders = await store.inflight(latest, lowestWaited - 1)
    for (let nonce = latest; nonce < lowestWaited; nonce++) {
      const holder = holders.find((entry) => entry.nonce === nonce)
      if (holder && (await this.isLive(holder.jobId))) return
      const attempts = holder ? (await store.load(holder.jobId)).attempts : []
      if (!(await this.fillNonce(nonce, holder && { jobId: holder.jobId, attempts }))) return
    }
  }

  /** A job that will still send or watch its transaction. A filler watched here is in `pending`. */
  private async isLive(jobId: string): Promise<boolean> {
    if (jobId.startsWith(FILLER_ID_PREFIX)) return false
    return this.parts.isJobLive(jobId)
  }
}
