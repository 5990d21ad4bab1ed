import { bumpIsDue } from './fee-policy.ts'
import {
  extendsOrIs,
  NonceTakenError,
  type Head,
  type RpcReceipt,
  type UnsignedTx,
} from './model.ts'
import type { SenderNode } from './node-client.ts'
import type { TxAttempt } from './tx-store.ts'
import type { PendingTx, ReorgedTx } from './pending-tx.ts'
import { dueForDirectReads, readDueReceipts, receiptOf } from './receipts-first.ts'

/** How a watched transaction ended: its receipt deep enough, or its nonce used by another one. */
export type FinalOutcome = { receipt: RpcReceipt } | { taken: NonceTakenError }

/** What the confirmer does about a key that does not move: the resender's and the fillers' part. */
export interface StuckHandlers {
  /** Re-signs a stuck transaction with higher fees. */
  bump(entry: PendingTx, current: Head): Promise<void>
  /** Spends nonces below the lowest one waited for that nobody will send. */
  fillHoles(current: Head, latestNonce: number): Promise<void>
  /** Sends the last attempts of these transactions again, the same bytes, in nonce order. */
  resend(entries: readonly PendingTx[]): Promise<void>
  /** Mined transactions a reorg took away, watched again here: in flight again, sent again. */
  reorgedOut(entries: readonly ReorgedTx[]): Promise<void>
  /** A transaction is final: its record is settled (and `entry.result` set) before its waiters hear of it. */
  final(entry: PendingTx, outcome: FinalOutcome): Promise<void>
}

export interface ConfirmerSettings {
  /** Blocks a receipt must be deep before its job ends (1 = mined). */
  confirmations: number
  bumpAfterBlocks: number
  /** Blocks a mined transaction stays watched for a reorg that takes it away (CHAIN_FINALITY_DEPTH). */
  finalityDepth: number
  /**
   * A key whose mined nonce has not moved for this long sends its unmined transactions again (the
   * same bytes). Bumps and fillers wait for blocks, and a chain that mines only when a transaction
   * arrives (anvil's automine) makes none while the key's own transactions are what went missing:
   * a node that dropped one from its pool, or a broadcast lost as a connection reset.
   */
  resendAfterMs: number
}

/**
 * A key's confirmer (Chainlink's confirmer): finds the receipts of what the key sent, waits until
 * they are deep enough, checks the block holding one is still canonical before it counts (a reorg
 * sends it back to waiting), and hands a key that stopped moving to the resender and the fillers.
 */
export class Confirmer {
  readonly pending = new Map<number, PendingTx>()
  /**
   * Mined and final for its job, by nonce, with the block it was mined in: watched until that block
   * is finalityDepth deep. A reorg can take a fulfilment away after its run ended; the key's mined
   * nonce count falling to it says so, and it is sent again, the same bytes (the request it answers
   * is still open: the record must not say fulfilled for a fulfilment the chain no longer has).
   */
  private readonly mined = new Map<number, { entry: PendingTx; block: number }>()
  /** The head of the last check: a head that does not extend it may be a reorg. */
  private lastHead: Head | undefined
  /** The key's mined nonce count as last read, and the hash of the head it was read at. */
  private nonceRead: { count: number; atHead: string } | undefined
  /** The key's mined nonce count at the last check, and the block where it last moved. */
  private minedNonce = -1
  private progress = 0
  /** When (Date.now()) the key's mined nonce count last moved, or its first transaction was tracked. */
  private progressAt = Date.now()

  constructor(
    private readonly address: string,
    private readonly node: Pick<SenderNode, 'send' | 'head' | 'secondsPerBlock'>,
    private readonly settings: ConfirmerSettings,
    private readonly stuck: StuckHandlers,
  ) {}

  /** The block where the key's mined nonce count last moved. */
  get progressBlock(): number {
    return this.progress
  }

  /**
   * Watches `nonce` for the job until its receipt is deep enough; rejects with NonceTakenError when
   * another transaction used the nonce, or with the hand-over error when this process lets the key go.
   * A second run of the same job joins the first's watch. A different job at a watched nonce (a
   * filler, or a job retried after its nonce went to one) takes the nonce over: the earlier job's
   * waiters are told at once, so none is left waiting for a receipt nobody looks for.
   */
  track(nonce: number, jobId: string, tx: UnsignedTx, attempts: TxAttempt[]): Promise<PendingTx> {
    return new Promise<PendingTx>((resolve, reject) => {
      this.watch(nonce, jobId, tx, attempts).waiters.push({ resolve, reject })
    })
  }

  /**
   * The key's mined nonce count as its owner read it on taking the key (recoverKey): the first look
   * then goes to the receipts with no read of the count of its own.
   */
  knowMinedCount(count: number): void {
    if (count <= this.minedNonce) return
    this.minedNonce = count
    this.progress = this.node.head?.number ?? this.progress
    this.progressAt = Date.now()
  }

  /** Watches `nonce` for the job with nobody waiting here (a transaction recovered from Redis). */
  watch(nonce: number, jobId: string, tx: UnsignedTx, attempts: TxAttempt[]): PendingTx {
    const earlier = this.pending.get(nonce)
    if (earlier?.jobId === jobId) {
      if (attempts.length > earlier.attempts.length) earlier.attempts = attempts
      return earlier
    }
    if (this.pending.size === 0) this.progressAt = Date.now()
    if (earlier) {
      this.pending.delete(nonce)
      const taken = new NonceTakenError(`nonce ${nonce} of ${this.address} is now job ${jobId}'s`)
      for (const waiter of earlier.waiters) waiter.reject(taken)
    }
    const entry = this.entryOf(nonce, jobId, tx, attempts)
    this.pending.set(nonce, entry)
    return entry
  }

  private entryOf(nonce: number, jobId: string, tx: UnsignedTx, attempts: TxAttempt[]): PendingTx {
    return {
      nonce,
      jobId,
      tx,
      attempts,
      sentAtBlock: this.node.head?.number ?? 0,
      sentAt: Date.now(),
      misses: 0,
      bumping: false,
      waiters: [],
    }
  }

  /**
   * Watches a transaction the key's owner before this one mined, less than finalityDepth deep (from
   * the store's index of mined transactions): a reorg may still take it away.
   */
  watchMinedBefore(
    nonce: number,
    jobId: string,
    tx: UnsignedTx,
    attempts: TxAttempt[],
    minedIn: number,
  ): void {
    if (this.pending.has(nonce)) return
    this.mined.set(nonce, { entry: this.entryOf(nonce, jobId, tx, attempts), block: minedIn })
  }

  /** Stops watching everything: each waiter is told `error` (the key was handed over, or closed). */
  handOver(error: Error): void {
    for (const entry of this.pending.values())
      for (const waiter of entry.waiters) waiter.reject(error)
    this.pending.clear()
    this.mined.clear()
  }

  /** Something to look at: transactions in flight, or mined ones not final yet. */
  get watching(): boolean {
    return this.pending.size > 0 || this.mined.size > 0
  }

  /** One look at the chain for this key: receipts, confirmations, stuck transactions, reorgs. */
  async check(current: Head): Promise<void> {
    if (!this.watching) return
    const mayHaveReorged = !extendsOrIs(current, this.lastHead)
    this.letGoOfFinal(current)
    // The count is read, not once a block, when a head that is not the last or its child may have
    // taken away what is mined, or what has a receipt not deep enough to count yet.
    const unconfirmed = [...this.pending.values()].some((entry) => entry.receipt)
    const countFirst = mayHaveReorged && (this.mined.size > 0 || unconfirmed)
    if (this.pending.size === 0 && !countFirst) {
      this.lastHead = current
      return
    }
    if (!countFirst && (await this.lookAtReceiptsFirst(current))) return
    const latest = await this.minedCount(current, mayHaveReorged)
    // Only once the count is known: a check that failed leaves the next one unsure too.
    this.lastHead = current
    const reorged = [
      ...this.watchMined(current, latest),
      ...(mayHaveReorged ? this.receiptsTakenAway(current, latest) : []),
    ].sort((a, b) => a.entry.nonce - b.entry.nonce)
    if (reorged.length > 0) await this.stuck.reorgedOut(reorged)
    if (this.pending.size === 0) return
    if (latest !== this.minedNonce) {
      this.minedNonce = latest
      this.progress = current.number
      this.progressAt = Date.now()
    }
    await Promise.all(
      [...this.pending.values()].map((entry) => this.checkOne(entry, current, latest)),
    )
    await this.resendIfStalled(latest)
    await this.stuck.fillHoles(current, latest)
  }

  /**
   * One look without the key's nonce count, when receipts alone tell (receipts-first.ts): reads the
   * receipts of what is due and confirms what has one. False when the count must be read first.
   */
  private async lookAtReceiptsFirst(current: Head): Promise<boolean> {
    const due = dueForDirectReads({
      pending: this.pending.values(),
      current,
      minedNonce: this.minedNonce,
      stalled: Date.now() - this.progressAt >= this.resendAfterMs(),
      bumpAfterBlocks: this.settings.bumpAfterBlocks,
    })
    if (!due) return false
    await readDueReceipts(this.node, due)
    // Set before confirming, as after a count: finish() may unset it for a block above this head.
    this.lastHead = current
    const mined = due.filter((entry) => entry.receipt).map((entry) => entry.nonce + 1)
    if (mined.length > 0 && Math.max(...mined) > this.minedNonce) {
      this.minedNonce = Math.max(...mined)
      this.progress = current.number
      this.progressAt = Date.now()
    }
    await Promise.all(
      [...this.pending.values()].map((entry) =>
        entry.receipt ? this.confirm(entry, entry.receipt, current) : undefined,
      ),
    )
    return true
  }

  /** How long the key's mined nonce stands still before its unmined transactions are sent again. */
  private resendAfterMs(): number {
    return Math.max(this.settings.resendAfterMs, 2_000 * this.node.secondsPerBlock())
  }

  /**
   * The key's mined nonce count, read once a head: a look at the head of the last check and of the
   * last read (a poll interval shorter than the chain's blocks) uses that read's count, as no block
   * came since. Any other head is read again, and so is one the chain may have reorganised back to
   * (a read at it may have counted a block the reorg took away).
   */
  private async minedCount(current: Head, mayHaveReorged: boolean): Promise<number> {
    if (!mayHaveReorged && this.nonceRead?.atHead === current.hash) return this.nonceRead.count
    const count = Number(
      await this.node.send<string>('eth_getTransactionCount', [this.address, 'latest']),
    )
    this.nonceRead = { count, atHead: current.hash }
    return count
  }

  /**
   * Receipts not deep enough to count (read above the head) that the key's count no longer covers:
   * a reorg took their block. Kept, one is waited on for a block a quiet chain may never mine, or
   * counted though no chain holds it; sent again instead, its waiters still waiting.
   */
  private receiptsTakenAway(current: Head, latest: number): ReorgedTx[] {
    const reorged: ReorgedTx[] = []
    for (const entry of this.pending.values()) {
      if (!entry.receipt || entry.nonce < latest) continue
      reorged.push({
        entry: this.sentAgainAt(entry, current),
        minedIn: Number(entry.receipt.blockNumber),
      })
      entry.receipt = undefined
    }
    return reorged
  }

  /** The entry watched from `current` on as if just sent (a reorg took its block away). */
  private sentAgainAt(entry: PendingTx, current: Head): PendingTx {
    entry.misses = 0
    entry.sentAt = Date.now()
    entry.sentAtBlock = current.number
    return entry
  }

  /** Lets go of mined transactions that are final: finalityDepth deep (their block counts as 1). */
  private letGoOfFinal(current: Head): void {
    for (const [nonce, { block }] of this.mined)
      if (current.number - block + 1 >= this.settings.finalityDepth) this.mined.delete(nonce)
  }

  /**
   * Watches again the mined transactions a reorg took away: the key's mined nonce count is at or
   * below their nonce. Each is sent again at once (the same bytes, so the same hash) by the key
   * sender; a nonce another transaction took meanwhile is told by the usual watch (its job is
   * forgotten: a run of it starts over).
   */
  private watchMined(current: Head, latest: number): ReorgedTx[] {
    const reorged: ReorgedTx[] = []
    for (const [nonce, { entry, block }] of this.mined) {
      if (nonce >= latest && !this.pending.has(nonce)) {
        this.mined.delete(nonce)
        entry.receipt = undefined
        entry.result = undefined
        entry.waiters = []
        this.pending.set(nonce, this.sentAgainAt(entry, current))
        reorged.push({ entry, minedIn: block })
      }
    }
    return reorged
  }

  /**
   * Sends again what the key waits for when its mined nonce has stood still for resendAfterMs, or
   * for two of the chain's blocks where those take longer: a transaction that reached the node just
   * as a block was sealed is in the one after, and a resend before then tells the node nothing (on
   * 12 s blocks a 5 s timer sent most fulfilments twice).
   */
  private async resendIfStalled(latestNonce: number): Promise<void> {
    const now = Date.now()
    const resendAfterMs = this.resendAfterMs()
    if (now - this.progressAt < resendAfterMs) return
    const due = [...this.pending.values()]
      .filter(
        (entry) =>
          !entry.receipt &&
          !entry.bumping &&
          entry.nonce >= latestNonce &&
          now - entry.sentAt >= resendAfterMs,
      )
      .sort((a, b) => a.nonce - b.nonce)
    if (due.length === 0) return
    for (const entry of due) entry.sentAt = now
    await this.stuck.resend(due)
  }

  private async checkOne(entry: PendingTx, current: Head, latestNonce: number): Promise<void> {
    if (entry.receipt) return this.confirm(entry, entry.receipt, current)
    if (entry.nonce < latestNonce) {
      const found = await receiptOf(this.node, entry)
      if (found) {
        entry.receipt = found
        return this.confirm(entry, found, current)
      }
      entry.misses += 1
      if (entry.misses >= 3)
        await this.finish(entry, {
          taken: new NonceTakenError(
            `nonce ${entry.nonce} of ${this.address} was used by another transaction`,
          ),
        })
      return
    }
    if (entry.bumping) return
    const due = bumpIsDue({
      nonce: entry.nonce,
      lowestUnmined: latestNonce,
      last: entry.attempts.at(-1),
      current,
      sentAtBlock: entry.sentAtBlock,
      progressBlock: this.progress,
      bumpAfterBlocks: this.settings.bumpAfterBlocks,
    })
    if (!due) return
    entry.bumping = true
    try {
      await this.stuck.bump(entry, current)
    } finally {
      entry.bumping = false
    }
  }

  private async confirm(entry: PendingTx, receipt: RpcReceipt, current: Head): Promise<void> {
    const { confirmations } = this.settings
    if (current.number < Number(receipt.blockNumber) + confirmations - 1) return
    if (confirmations > 1) {
      // Deep enough: make sure the block holding it is still the canonical one.
      const again = await this.node.send<RpcReceipt | null>('eth_getTransactionReceipt', [
        receipt.transactionHash,
      ])
      if (!again || again.blockHash !== receipt.blockHash) {
        entry.receipt = undefined
        return
      }
    }
    await this.finish(entry, { receipt })
  }

  /** Ends a watch: the record first (the run retried elsewhere reads it), then the waiters here. */
  private async finish(entry: PendingTx, outcome: FinalOutcome): Promise<void> {
    if (this.pending.get(entry.nonce) !== entry) return
    this.pending.delete(entry.nonce)
    if ('receipt' in outcome && this.settings.finalityDepth > 1) {
      const block = Number(outcome.receipt.blockNumber)
      this.mined.set(entry.nonce, { entry, block })
      // Mined above the head last checked (its receipt read after the head): the next head may
      // extend that one while a reorg took this block away, so the next check reads the count.
      if (this.lastHead && block > this.lastHead.number) this.lastHead = undefined
    }
    try {
      await this.stuck.final(entry, outcome)
    } finally {
      for (const waiter of entry.waiters)
        if ('receipt' in outcome) waiter.resolve(entry)
        else waiter.reject(outcome.taken)
    }
  }
}
