import { asError, HandedOverError, JobBoundError, type Fees, type UnsignedTx } from './model.ts'
import type { OrderedBroadcaster } from './ordered-broadcast.ts'
import type { SignAttempt } from './signing.ts'
import type { FirstAttempt, TxAttempt, TxStore } from './tx-store.ts'

/** A job waiting for its turn in a key's ordered part. */
export interface SigningRequest {
  jobId: string
  tx: UnsignedTx
  fees: Fees
}

export interface Signed {
  nonce: number
  attempt: TxAttempt
  /** The broadcast, under way. */
  sending: Promise<void>
}

interface Waiting extends SigningRequest {
  resolve: (signed: Signed) => void
  reject: (error: Error) => void
}

export interface SigningLineParts {
  address: string
  store: TxStore
  sign: SignAttempt
  broadcaster: OrderedBroadcaster
  /** Called once a broadcast is answered (the receipt may be there now). */
  onBroadcast: () => void
  /** The fence this process owns the key under; undefined when it does not own it. */
  fence: () => string | undefined
  /**
   * Finds the key's next nonce again (from Redis and the node) after a batch whose recording may or
   * may not have happened (Redis did not answer): the line signs nothing until it has.
   */
  resync: () => Promise<number>
}

/**
 * A key's ordered part (Chainlink's broadcaster with its in-memory nonce tracker), run by the key's
 * owner alone: hands out the key's nonces in the order jobs arrive, signs, records every attempt of
 * the batch in Redis in one fenced script (nothing leaves unless the fence still owns the key), then
 * hands them to the broadcaster in nonce order. Jobs that arrive while a batch is recorded form the
 * next batch, so a key is not limited to one transaction per Redis round trip.
 */
export class SigningLine {
  /** The next nonce to hand out; the key's owner sets it when it takes the key. */
  nextNonce = 0
  private readonly queue: Waiting[] = []
  private busy = false
  private unsure = false

  constructor(private readonly parts: SigningLineParts) {}

  signInOrder(request: SigningRequest): Promise<Signed> {
    return new Promise<Signed>((resolve, reject) => {
      this.queue.push({ ...request, resolve, reject })
      if (!this.busy) void this.drain()
    })
  }

  private async drain(): Promise<void> {
    this.busy = true
    try {
      while (this.queue.length > 0) await this.signBatch(this.queue.splice(0, this.queue.length))
    } finally {
      this.busy = false
    }
  }

  private async signBatch(batch: Waiting[]): Promise<void> {
    const fence = this.parts.fence()
    if (fence === undefined) return rejectAll(batch, notOwned(this.parts.address))
    if (this.unsure) {
      const next = await this.parts.resync().catch(asError)
      if (next instanceof Error) return rejectAll(batch, next)
      this.nextNonce = next
      this.unsure = false
    }
    const signed: FirstAttempt[] = []
    for (const [index, item] of batch.entries()) {
      const nonce = this.nextNonce + index
      const attempt = await this.parts.sign(item.tx, nonce, item.fees).catch(asError)
      if (attempt instanceof Error) {
        // Nothing after it is signed: its nonce would be a hole. The rest go again next round.
        item.reject(attempt)
        this.queue.unshift(...batch.slice(index + 1))
        break
      }
      signed.push({ jobId: item.jobId, nonce, attempt, tx: storedTx(item.tx) })
    }
    if (signed.length === 0) return
    const answer = await this.parts.store
      .recordFirstAttempts(this.parts.address, fence, signed)
      .catch(asError)
    if (answer instanceof Error) {
      // The script may have run with its answer lost: recorded attempts are found by the resync.
      this.unsure = true
      return rejectAll(batch.slice(0, signed.length), answer)
    }
    if (answer === 'not-owner') return rejectAll(batch, notOwned(this.parts.address))
    if (answer === 'behind') {
      // Its nonces went to another batch since (one recorded late): signed again after a resync.
      this.unsure = true
      this.queue.unshift(...batch.slice(0, signed.length))
      return
    }
    this.settleBatch(batch, signed, answer)
  }

  /** Resolves the recorded jobs (broadcast in nonce order) up to the first bound elsewhere. */
  private settleBatch(
    batch: Waiting[],
    signed: readonly FirstAttempt[],
    answer: ReadonlyArray<'recorded' | 'exists'>,
  ): void {
    for (const [index, outcome] of answer.entries()) {
      const item = batch[index] as Waiting
      const { nonce, attempt } = signed[index] as FirstAttempt
      if (outcome === 'exists') {
        // Its nonce was not used: the jobs after it are signed again from it.
        item.reject(new JobBoundError(item.jobId))
        this.queue.unshift(...batch.slice(index + 1, signed.length))
        return
      }
      this.nextNonce = nonce + 1
      item.resolve({
        nonce,
        attempt,
        sending: this.parts.broadcaster.send(attempt.raw).finally(this.parts.onBroadcast),
      })
    }
  }
}

function rejectAll(batch: readonly Waiting[], error: Error): void {
  for (const item of batch) item.reject(error)
}

function notOwned(address: string): HandedOverError {
  return new HandedOverError(`this process does not own sender key ${address} now`)
}

function storedTx(tx: UnsignedTx): FirstAttempt['tx'] {
  return { to: tx.to, data: tx.data, gasLimit: tx.gasLimit }
}
