import { asError, type Fees, type UnsignedTx } from './model.ts'
import type { OrderedBroadcaster } from './ordered-broadcast.ts'
import type { SignAttempt } from './signing.ts'
import type { TxAttempt, TxStore } from './tx-store.ts'

/** A job waiting for its turn in a key's ordered part. */
export interface SigningRequest {
  jobId: string
  tx: UnsignedTx
  /** Set when the job already holds a nonce (a crash left it allocated but unsigned). */
  nonce: number | undefined
  fees: Fees
  filler: boolean
  /** The job's submitted data, stored with its nonce when no queue keeps it (the direct path). */
  data?: unknown
}

export interface Signed {
  allocated: number
  attempt: TxAttempt
  /** The broadcast, under way. */
  sending: Promise<void>
}

interface Waiting extends SigningRequest {
  resolve: (signed: Signed) => void
  reject: (error: Error) => void
}

export interface SigningLineParts {
  store: TxStore
  sign: SignAttempt
  broadcaster: OrderedBroadcaster
  /** Called once a broadcast is answered (the receipt may be there now). */
  onBroadcast: () => void
  /** The key's next nonce as the node sees it (its pending transaction count). */
  chainNextNonce: () => Promise<number>
}

/** Allocates the batch's nonces, in batch order (undefined: the key's counter is gone, see allocate). */
function allocateAll(
  store: TxStore,
  batch: readonly Waiting[],
  fallbackNext: number | undefined,
): Promise<Array<PromiseSettledResult<number | undefined>>> {
  return Promise.allSettled(
    batch.map((item) =>
      item.nonce === undefined
        ? store.allocateNonce(item.jobId, fallbackNext, item.data)
        : Promise.resolve(item.nonce),
    ),
  )
}

/**
 * A key's ordered part (Chainlink's broadcaster and nonce tracker): allocates a job's nonce (unless
 * it holds one), signs and records its attempt, and hands it to the broadcaster, in the order jobs
 * arrive here. Jobs that arrive while a batch is being signed form the next batch: its nonce
 * allocations and its recorded attempts each leave for Redis in one write (the store's connection
 * pipelines commands issued together, and Redis runs them in order), so a key is not limited to one
 * transaction per two Redis round trips.
 */
export class SigningLine {
  /** The next nonce this process expects to hand out (the store's counter decides). */
  nextNonce = 0
  private readonly queue: Waiting[] = []
  private busy = false

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

  /**
   * The batch's nonces from the key's counter in Redis. Without a counter (Redis lost its state, and
   * the runner rebuilds), the next nonce is the node's pending count, or past what this process
   * allocated itself if that is further: another process's allocations are not known here, and a
   * nonce from memory alone would be one the other process used, replacing its transaction in the
   * node's pool (found by the Redis-loss test under load).
   */
  private async allocate(batch: Waiting[]): Promise<Array<PromiseSettledResult<number>>> {
    const { store } = this.parts
    const first = await allocateAll(store, batch, undefined)
    if (!first.some((nonce) => nonce.status === 'fulfilled' && nonce.value === undefined))
      return first as Array<PromiseSettledResult<number>>
    // A node that does not answer fails the batch's jobs (they are retried), never the line itself.
    const fromChain = await this.parts.chainNextNonce().catch(asError)
    if (fromChain instanceof Error)
      return batch.map(() => ({ status: 'rejected', reason: fromChain }) as const)
    const again = await allocateAll(store, batch, Math.max(fromChain, this.nextNonce))
    return again.map((nonce) =>
      nonce.status === 'fulfilled' && nonce.value === undefined
        ? { status: 'rejected', reason: new Error('the key has no nonce counter in Redis') }
        : (nonce as PromiseSettledResult<number>),
    )
  }

  private async signBatch(batch: Waiting[]): Promise<void> {
    const nonces = await this.allocate(batch)
    const attempts: Array<TxAttempt | Error> = []
    for (const [index, item] of batch.entries()) {
      const nonce = nonces[index] as PromiseSettledResult<number>
      if (nonce.status === 'rejected') {
        attempts.push(asError(nonce.reason))
        continue
      }
      this.nextNonce = Math.max(this.nextNonce, nonce.value + 1)
      attempts.push(
        await this.parts.sign(item.tx, nonce.value, item.fees, item.filler).catch(asError),
      )
    }
    const recorded = await Promise.allSettled(
      batch.map((item, index) => {
        const attempt = attempts[index] as TxAttempt | Error
        return attempt instanceof Error
          ? Promise.reject(attempt)
          : this.parts.store.addAttempt(item.jobId, [attempt])
      }),
    )
    // Handed to the broadcaster in batch order, which is nonce order.
    for (const [index, item] of batch.entries()) {
      const outcome = recorded[index] as PromiseSettledResult<void>
      const attempt = attempts[index]
      if (outcome.status === 'rejected' || !attempt || attempt instanceof Error) {
        item.reject(
          outcome.status === 'rejected'
            ? asError(outcome.reason)
            : new Error('the transaction was not signed'),
        )
        continue
      }
      const allocated = (nonces[index] as PromiseFulfilledResult<number>).value
      item.resolve({
        allocated,
        attempt,
        sending: this.parts.broadcaster.send(attempt.raw).finally(this.parts.onBroadcast),
      })
    }
  }
}
