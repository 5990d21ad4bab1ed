import { FeedrunnerError } from '../../config/errors.ts'
import { operatorClosedIt } from '../request-fate.ts'
import { Confirmer, type FinalOutcome } from './confirmer.ts'
import type { PendingTx } from './pending-tx.ts'
import { Fillers } from './fillers.ts'
import {
  errorText,
  FILLER_ID_PREFIX,
  storedTx,
  HandedOverError,
  NonceTakenError,
  zeroKeyCounters,
  type RpcReceipt,
  type SenderSettings,
  type UnsignedTx,
} from './model.ts'
import type { SenderNode } from './node-client.ts'
import { isToleratedRefusal, refusalOf } from './node-refusal.ts'
import { createOrderedBroadcaster, type OrderedBroadcaster } from './ordered-broadcast.ts'
import { SigningLine } from './ordered-signing.ts'
import { resultOfReceipt } from './receipt-result.ts'
import { createResender } from './resender.ts'
import { attemptSigner, type SignAttempt } from './signing.ts'
import { recoverKey } from './key-recovery.ts'
import { ResendGuard } from './resend-guard.ts'
import type { TxAttempt, TxJobRecord, TxStore } from './tx-store.ts'
import type { TxSigner } from './tx-signer.ts'
import type { Logger } from '../../config/logger.ts'
import type { KeyCounters, KeyStats, TxResult } from './types.ts'

export interface KeySenderParts {
  signer: TxSigner
  node: SenderNode
  store: TxStore
  settings: SenderSettings
  /** Wakes the poll loop: a broadcast was answered, its receipt may be there. */
  wake: () => void
  reportError: (error: Error) => void
  /** Tells what the key's owner did that an operator should hear of (a fulfilment sent again after a reorg). */
  logger?: Pick<Logger, 'warn' | 'info'>
}

/**
 * Where the key stands in this process: `standby` (another process owns it, or nobody yet),
 * `activating` (just taken: its state is being recovered), `active` (sending), `draining` (owned,
 * finishing what it has, taking nothing new: this process owns more than its share).
 */
export type KeyState = 'standby' | 'activating' | 'active' | 'draining'

/**
 * One key's ordered sender, alive in the process that owns the key (ownership/key-leases.ts): the
 * signing line hands out nonces and records every signed attempt in Redis under the owner's fence
 * before it leaves; the confirmer watches every transaction of the key that is not final, bumps the
 * stuck and fills the holes. When the key is lost or let go, whatever waits here is handed over.
 */
export class KeySender {
  readonly address: string
  readonly confirmer: Confirmer
  readonly counters: KeyCounters = zeroKeyCounters()
  state: KeyState = 'standby'
  /** The recovery under way since the key was taken (settled once active, or given up). */
  activation: Promise<void> = Promise.resolve()
  private fence: string | undefined
  /** Ends a recovery's wait for the node's pool when the key is let go (handed over, or closing). */
  private released = new AbortController()
  private readonly sign: SignAttempt
  private readonly line: SigningLine
  private readonly broadcaster: OrderedBroadcaster
  private readonly fillers: Fillers
  /** Whether bytes signed earlier may go again now: every resend of the key's asks it. */
  private readonly guard: ResendGuard
  /** Jobs sent or resumed here, by job id: a second run of one joins it. */
  private readonly running = new Map<string, Promise<TxResult>>()

  constructor(private readonly parts: KeySenderParts) {
    const { signer, node, settings, store, reportError, wake } = parts
    this.address = signer.address
    this.sign = attemptSigner(signer, node)
    const fence = () => this.fence
    const common = { address: this.address, node, sign: this.sign, store, reportError, fence }
    const bump = createResender({
      ...common,
      maxFeeCap: settings.maxFeeCap,
      counters: this.counters,
    })
    const guard = (this.guard = new ResendGuard({
      address: this.address,
      node,
      store,
      counters: this.counters,
      fillers: { fillNonce: (nonce, holder) => this.fillers.fillNonce(nonce, holder) },
      logger: parts.logger,
    }))
    this.confirmer = new Confirmer(this.address, node, settings, {
      bump: async (entry, current) => {
        if (await guard.mayGo(entry, 'a stalled transaction was to be bumped'))
          await bump(entry, current)
        // Held for its request (or filled): looked at again a bump's wait later, not every block.
        else entry.sentAtBlock = current.number
      },
      fillHoles: (current, latest) => this.fillers.fillHoles(current, latest),
      // What the node answers does not matter here: the receipts tell, and a bump follows a stall.
      resend: async (entries) => {
        this.counters.resent += await guard.sendAgain(
          entries,
          'a stalled transaction was to be sent again',
        )
      },
      final: (entry, outcome) => this.settle(entry, outcome),
      reorgedOut: (reorged) => guard.sendAgainAfterReorg(reorged),
    })
    this.fillers = new Fillers({
      ...common,
      confirmer: this.confirmer,
      bumpAfterBlocks: settings.bumpAfterBlocks,
      counters: this.counters,
      onBroadcast: wake,
    })
    this.broadcaster = createOrderedBroadcaster(
      (calls) => node.broadcastBatch(calls),
      isToleratedRefusal,
      {
        minIntervalMs: settings.broadcastIntervalMs,
      },
    )
    this.line = new SigningLine({
      address: this.address,
      store,
      sign: this.sign,
      broadcaster: this.broadcaster,
      onBroadcast: wake,
      fence,
      resync: () => this.recover(this.fence),
    })
  }

  /** Whether new jobs may be given to this key here. */
  get available(): boolean {
    return this.state === 'active'
  }

  /** Whether this process owns the key (active, draining, or recovering it). */
  get owned(): boolean {
    return this.fence !== undefined
  }

  /** Jobs here and transactions watched: the least loaded key gets the next job. */
  get load(): number {
    return this.running.size + this.confirmer.pending.size
  }

  /** Nothing of the key's is in flight here: it can be handed to another process at no cost. */
  get idle(): boolean {
    return this.running.size === 0 && this.confirmer.pending.size === 0
  }

  /** Transactions to watch: the poll loop has something to look at. */
  get hasWork(): boolean {
    return this.owned && this.confirmer.watching
  }

  stats(): KeyStats {
    return {
      address: this.address,
      nextNonce: this.line.nextNonce,
      pending: this.confirmer.pending.size,
      owned: this.owned,
      ...this.counters,
    }
  }

  /**
   * This process took the key under `fence`: its next nonce is found again (never lower than the
   * stored one, the node's pending count, or any recorded in-flight nonce), what was in flight is sent
   * again and watched, then it takes work. Tried again until it succeeds or the key is lost.
   */
  activate(fence: string): Promise<void> {
    this.fence = fence
    this.released = new AbortController()
    this.state = 'activating'
    this.activation = this.recoverUntilActive(fence)
    return this.activation
  }

  private async recoverUntilActive(fence: string): Promise<void> {
    for (let attempt = 0; this.fence === fence; attempt++) {
      try {
        const next = await this.recover(fence)
        if (this.fence !== fence) return
        this.line.nextNonce = next
        this.state = 'active'
        return
      } catch (error) {
        if (this.fence !== fence) return
        this.parts.reportError(
          new FeedrunnerError(`could not take over sender key ${this.address}; trying again`, {
            kind: 'unavailable',
            cause: error,
          }),
        )
        await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** attempt)))
      }
    }
  }

  /** The key is not this process's any more: nothing new is signed, and every waiter here is told. */
  handOver(why: string): void {
    this.fence = undefined
    this.released.abort()
    this.state = 'standby'
    const handedOver = new HandedOverError(`sender key ${this.address} ${why}`)
    this.broadcaster.drop(handedOver)
    this.confirmer.handOver(handedOver)
  }

  /** Stops (or resumes) giving the key new jobs while this process owns more than its share. */
  setDraining(draining: boolean): void {
    if (draining && this.state === 'active') this.state = 'draining'
    else if (!draining && this.state === 'draining') this.state = 'active'
  }

  /** Sends a job that has no transaction yet (or joins its run here). */
  send(jobId: string, tx: UnsignedTx): Promise<TxResult> {
    return this.join(jobId, () => this.sendNew(jobId, tx))
  }

  /**
   * Goes on with a job whose transaction this key sent (a retried run): the same bytes, never a new
   * nonce, while the chain would take them; `tx` (the run's own) starts it over if their nonce went
   * to another transaction.
   */
  resume(jobId: string, record: TxJobRecord, tx: UnsignedTx): Promise<TxResult> {
    return this.join(jobId, () => this.resumeSent(jobId, record, tx))
  }

  private join(jobId: string, start: () => Promise<TxResult>): Promise<TxResult> {
    const running = this.running.get(jobId)
    if (running) return running
    const run = start().finally(() => this.running.delete(jobId))
    this.running.set(jobId, run)
    return run
  }

  /** Resolves once the jobs run here have ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.running.values()])
  }

  private async sendNew(jobId: string, tx: UnsignedTx): Promise<TxResult> {
    for (;;) {
      // Simulated just before it is signed: a request cancelled or answered since, or a callback
      // that would run out of gas, costs an eth_call instead of a reverted transaction.
      const reason = await this.parts.node.simulate(this.address, tx)
      if (reason !== undefined)
        return {
          status: operatorClosedIt(reason) ? 'already-fulfilled' : 'reverted',
          reason,
          from: this.address,
        }
      const fees = await this.parts.node.currentFees()
      const signed = await this.line.signInOrder({ jobId, tx, fees })
      this.counters.sent += 1
      try {
        const watched = { jobId, nonce: signed.nonce, tx, attempts: [signed.attempt] }
        return finalResult(await this.watchSent(watched, () => signed.sending))
      } catch (error) {
        // Another transaction used the nonce: the job's record is gone, so it starts over.
        if (!(error instanceof NonceTakenError)) throw error
      }
    }
  }

  private async resumeSent(
    jobId: string,
    record: TxJobRecord,
    fresh: UnsignedTx,
  ): Promise<TxResult> {
    const last = record.attempts.at(-1)
    const tx = storedTx(this.address, record.tx)
    if (!last) throw new HandedOverError(`tx job ${jobId} has no signed attempt yet`)
    const watched = { jobId, nonce: record.nonce, tx, attempts: record.attempts }
    try {
      // Asked as every resend is: a reorg may have taken the request away, or made it again with
      // other parameters, since these bytes were signed.
      const sendAgain = async () => {
        const entry = this.confirmer.watch(record.nonce, jobId, tx, record.attempts)
        if (await this.guard.mayGo(entry, 'a run went on with the transaction it had sent'))
          await this.parts.node.broadcast(last.raw)
      }
      return finalResult(await this.watchSent(watched, sendAgain))
    } catch (error) {
      if (!(error instanceof NonceTakenError)) throw error
      return this.sendNew(jobId, fresh)
    }
  }

  /**
   * Watches a recorded transaction from the moment it is on its way. Bytes the node refuses for good
   * would leave the nonce unused and every later transaction of the key behind it: the nonce goes to
   * a filler, and the job fails for good, with the node's words. Bytes the node does not take now (no
   * funds, a full pool, a node away) stay watched and are sent again while the key stands still.
   */
  private async watchSent(
    job: { jobId: string; nonce: number; tx: UnsignedTx; attempts: TxAttempt[] },
    send: () => Promise<void>,
  ): Promise<PendingTx> {
    const receipt = this.confirmer.track(job.nonce, job.jobId, job.tx, job.attempts)
    // The watch can end while the broadcast is out (the key handed over: a lease lost as Redis was
    // flushed, a close): the caller hears of it when it awaits the receipt, and until then the
    // rejection must count as handled, or Node ends the process (an unhandled rejection).
    receipt.catch(() => undefined)
    try {
      await send()
    } catch (error) {
      if (error instanceof HandedOverError) throw error
      // The filler takes the nonce over from this watch.
      if (refusalOf(error) === 'fatal') throw await this.fillers.refusedForGood(job, error)
      this.parts.reportError(
        new FeedrunnerError(
          `the node did not take nonce ${job.nonce} of ${this.address} now; it is sent again while the key stands still: ${errorText(error).trim()}`,
          // With its cause: every endpoint away is the pool's outage, told once by the reporter, not
          // an error line per transaction.
          { kind: 'node_refused', retryable: true, cause: error },
        ),
      )
    }
    return receipt
  }

  /** Finds the key's next nonce and watches what Redis holds in flight (key-recovery.ts). */
  private async recover(fence: string | undefined): Promise<number> {
    if (fence === undefined)
      throw new HandedOverError(`sender key ${this.address} is not owned here`)
    return recoverKey({
      address: this.address,
      fence,
      node: this.parts.node,
      store: this.parts.store,
      confirmer: this.confirmer,
      memoryNext: this.line.nextNonce,
      drainBoundMs: this.parts.settings.drainBoundMs,
      lossWaitMs: this.parts.settings.keyLeaseMs,
      logger: this.parts.logger,
      pollIntervalMs: this.parts.settings.pollIntervalMs,
      released: this.released.signal,
      fillNonce: (nonce) => this.fillers.fillNonce(nonce),
      onFatalRefusal: (entry) => this.fillers.fillNonce(entry.nonce, entry),
      mayGo: (entry) =>
        this.guard.mayGo(entry, 'a key taken over was to send what it had in flight'),
    })
  }

  /** A watched transaction is final: its record says so before anyone waiting hears of it. */
  private async settle(entry: PendingTx, outcome: FinalOutcome): Promise<void> {
    const { store, logger } = this.parts
    if ('taken' in outcome) {
      this.counters.noncesTaken += 1
      logger?.warn(
        { address: this.address, nonce: entry.nonce, job: entry.jobId },
        `nonce ${entry.nonce} of ${this.address} was spent by a transaction this installation did not ` +
          `record: its job is sent again at a new nonce. Another program signs with this key, or Redis ` +
          `lost the record; give each node its own key (docs/operating.md)`,
      )
      return store.forget(this.address, entry)
    }
    entry.result = entry.jobId.startsWith(FILLER_ID_PREFIX)
      ? { status: 'already-fulfilled', reason: 'nonce spent by a filler transaction' }
      : await this.resultOf(outcome.receipt, entry.nonce, entry.tx)
    const { finalityDepth } = this.parts.settings
    await store.settle(this.address, entry, entry.result, {
      ...(finalityDepth > 1 ? { minedIn: Number(outcome.receipt.blockNumber) } : {}),
      head: this.parts.node.head?.number ?? 0,
      finalityDepth,
    })
  }

  /** The job's result from its mined receipt; a revert is replayed to learn its reason. */
  private async resultOf(receipt: RpcReceipt, nonce: number, tx: UnsignedTx): Promise<TxResult> {
    if (receipt.status !== '0x1') this.counters.reverted += 1
    if (tx.data === '0x' && tx.to === this.address)
      return {
        status: 'already-fulfilled',
        reason: 'nonce spent by a filler transaction',
        from: this.address,
      }
    return resultOfReceipt(receipt, nonce, this.address, (blockTag) =>
      this.parts.node.simulate(this.address, tx, blockTag).catch(() => undefined),
    )
  }
}

/** A watched job's result (set when it became final). */
function finalResult(entry: PendingTx): TxResult {
  if (!entry.result) throw new Error(`tx job ${entry.jobId} ended without a result`)
  return entry.result
}
