import { setTimeout as delay } from 'node:timers/promises'
import { getAddress } from 'ethers'
import { FeedrunnerError } from '../../config/errors.ts'
import type { KeySender } from './key-sender.ts'
import { HandedOverError, JobBoundError, type UnsignedTx } from './model.ts'
import type { TxStore } from './tx-store.ts'
import type { TxResult } from './types.ts'

/**
 * Where a job goes, in the process that asks: a job with a result answers it; a job bound to a key
 * this process owns resumes there (same bytes, never a new nonce); one bound to a key another process
 * owns (or nobody yet) waits for that key's owner to settle it; a job with no transaction yet goes to
 * the least loaded key this process owns.
 */
export class JobRuns {
  /** Set when the sender closes: nothing new is sent, nothing waits on. */
  closing = false
  private nextPick = 0

  constructor(
    private readonly keySenders: ReadonlyMap<string, KeySender>,
    private readonly store: TxStore,
    private readonly chainId: number,
    private readonly pollIntervalMs: number,
  ) {}

  /** Whether the job has a transaction already, sent by any process. */
  async bound(jobId: string): Promise<boolean> {
    return (await this.store.load(jobId)) !== undefined
  }

  /** One job to its end: resumed, waited for, or sent from a key picked now (`from`, when given). */
  async run(jobId: string, tx: UnsignedTx, signal?: AbortSignal, from?: string): Promise<TxResult> {
    for (;;) {
      const record = await this.store.load(jobId)
      if (record?.result) return record.result
      if (record) {
        const owner = this.keyOf(record.from)
        if (owner && ownsReady(owner)) return await owner.resume(jobId, record, tx)
        const settled = await this.waitForOwner(jobId, record.from, tx, signal)
        if (settled) return settled
        continue
      }
      const keySender = from === undefined ? this.pickKey() : this.givenKey(from)
      if (!keySender)
        throw new FeedrunnerError(
          this.closing
            ? 'the transaction sender is closing'
            : from === undefined
              ? `no sender key of chain ${this.chainId} is owned by this process now: another runner process owns them, or this one is taking them over`
              : `sender key ${getAddress(from)} of chain ${this.chainId} takes no new work in this process now: another runner process owns it, or this one is taking it over or letting it go`,
          { kind: 'unavailable' },
        )
      try {
        return await keySender.send(jobId, tx)
      } catch (error) {
        // Another run of the job bound it to a transaction first: read that record.
        if (!(error instanceof JobBoundError)) throw error
      }
    }
  }

  /** The least loaded key that takes new jobs here; ties go round the keys. */
  private pickKey(): KeySender | undefined {
    const available = [...this.keySenders.values()].filter((keySender) => keySender.available)
    if (this.closing || available.length === 0) return undefined
    const start = this.nextPick++ % available.length
    const rotated = [...available.slice(start), ...available.slice(0, start)]
    return rotated.reduce((least, keySender) => (keySender.load < least.load ? keySender : least))
  }

  /** The given key, when this process owns it and gives it new jobs. */
  private givenKey(address: string): KeySender | undefined {
    const keySender = this.keyOf(address)
    return this.closing || !keySender?.available ? undefined : keySender
  }

  private keyOf(address: string): KeySender | undefined {
    return this.keySenders.get(address.toLowerCase())
  }

  /**
   * A job bound to a key another process owns (or nobody yet): its owner sends it again and settles
   * its record; this waits for that, or until this process owns the key itself. Undefined when the
   * record went (its nonce was taken): the job starts over.
   */
  private async waitForOwner(
    jobId: string,
    from: string,
    tx: UnsignedTx,
    signal: AbortSignal | undefined,
  ): Promise<TxResult | undefined> {
    for (;;) {
      if (signal?.aborted || this.closing)
        throw new HandedOverError(
          `tx job ${jobId} is bound to sender key ${getAddress(from)}, whose owner has not settled it yet`,
        )
      await delay(Math.max(100, this.pollIntervalMs), undefined, { signal }).catch(() => undefined)
      const record = await this.store.load(jobId)
      if (!record) return undefined
      if (record.result) return record.result
      const owner = this.keyOf(from)
      if (owner && ownsReady(owner)) return owner.resume(jobId, record, tx)
    }
  }
}

/** The key is this process's and recovered: its in-flight jobs are watched here. */
function ownsReady(keySender: KeySender): boolean {
  return keySender.owned && keySender.state !== 'activating'
}
