import { setTimeout as delay } from 'node:timers/promises'
import { UnrecoverableError } from 'bullmq'
import {
  FeedrunnerError,
  reviveErrorText,
  rootCauseFirst,
  serialiseError,
  withContext,
} from '../../config/errors.ts'
import { getAddress } from 'ethers'
import { ALREADY_FULFILLED_REASON } from '../operator.ts'
import { Confirmer } from './confirmer.ts'
import { Fillers } from './fillers.ts'
import {
  errorText,
  fillerTx,
  NonceTakenError,
  type KeyCounters,
  type RpcReceipt,
  type SenderSettings,
  type UnsignedTx,
} from './model.ts'
import type { SenderNode } from './node-client.ts'
import { isToleratedRefusal, refusalOf } from './node-refusal.ts'
import { createOrderedBroadcaster } from './ordered-broadcast.ts'
import { SigningLine } from './ordered-signing.ts'
import { resultOfReceipt } from './receipt-result.ts'
import { createResender } from './resender.ts'
import { attemptSigner, type SignAttempt } from './signing.ts'
import { TxStore, type TxAttempt } from './tx-store.ts'
import type { TxSigner } from './tx-signer.ts'
import {
  jobDataSchema,
  type KeyStats,
  type RunMode,
  type TxJobData,
  type TxJobLookup,
  type TxResult,
} from './types.ts'

/** How often a job run in this process without a queue is tried (as a queued job is). */
const DIRECT_ATTEMPTS = 5
/** The first retry's delay; each next one doubles (as the queued job's exponential backoff). */
const DIRECT_BACKOFF_MS = 500

export interface KeySenderParts {
  signer: TxSigner
  node: SenderNode
  /** The connection of the key's tx store (auto-pipelined). */
  store: TxStore
  jobs: TxJobLookup
  settings: SenderSettings
  /** Wakes the poll loop: a broadcast was answered, its receipt may be there. */
  wake: () => void
  reportError: (error: Error) => void
}

/**
 * One key's ordered sender. A job runs in two parts: the ordered part (the signing line: allocate the
 * nonce in Redis, sign with a cached fee, record the signed bytes, broadcast) one job at a time per
 * key, and the wait for its receipt, shared through the key's confirmer, so many jobs wait at once.
 *
 * Crash safety: a job's nonce and signed transaction are in Redis before the transaction leaves, so
 * a retried job broadcasts the same bytes again instead of signing a second transaction with a new
 * nonce, and a restarted sender re-broadcasts what a crash left signed (recover).
 */
export class KeySender {
  readonly address: string
  readonly confirmer: Confirmer
  readonly counters: KeyCounters = { sent: 0, bumped: 0, reverted: 0, filled: 0, resent: 0 }
  private readonly store: TxStore
  private readonly sign: SignAttempt
  private readonly line: SigningLine
  private readonly fillers: Fillers
  /** Jobs run here without a queue, by job id: a second submit of one joins it. */
  private readonly direct = new Map<string, Promise<TxResult>>()
  /** When the leases of the direct jobs were last written, and whether a job started since. */
  private leasedAt = Number.NEGATIVE_INFINITY
  private leaseStale = false
  private closing = false

  constructor(private readonly parts: KeySenderParts) {
    const { signer, node, settings, store, reportError, wake } = parts
    this.address = signer.address
    this.store = store
    this.sign = attemptSigner(signer, node)
    const common = { address: this.address, node, sign: this.sign, store, reportError }
    const bump = createResender({
      ...common,
      maxFeeCap: settings.maxFeeCap,
      counters: this.counters,
    })
    this.confirmer = new Confirmer(this.address, node, settings, {
      bump,
      fillHoles: (current, latest) => this.fillers.fillHoles(current, latest),
      resend: async (entries) => {
        // What the node answers does not matter here: the receipts tell, and a bump follows a stall.
        await node.broadcastBatch(
          entries.map((entry) => [
            'eth_sendRawTransaction',
            [(entry.attempts.at(-1) as TxAttempt).raw],
          ]),
        )
        this.counters.resent += entries.length
      },
    })
    this.fillers = new Fillers({
      ...common,
      confirmer: this.confirmer,
      bumpAfterBlocks: settings.bumpAfterBlocks,
      counters: this.counters,
      // A job run by a process without a queue is live while its lease lasts; a queued job while queued.
      isJobLive: async (jobId) =>
        (await store.isLeased(jobId, Date.now())) || (await parts.jobs.isLive(jobId)),
      onBroadcast: wake,
    })
    const broadcaster = createOrderedBroadcaster(node.broadcastBatch, isToleratedRefusal, {
      minIntervalMs: settings.broadcastIntervalMs,
    })
    this.line = new SigningLine({
      store,
      sign: this.sign,
      broadcaster,
      onBroadcast: wake,
      chainNextNonce: () =>
        node
          .send<string>('eth_getTransactionCount', [this.address, 'pending'])
          .then((count) => Number(count)),
    })
  }

  stats(): KeyStats {
    return {
      address: this.address,
      nextNonce: this.line.nextNonce,
      pending: this.confirmer.pending.size,
      ...this.counters,
    }
  }

  /** Nonce from the chain, raised past anything still in flight; re-broadcasts what a crash left signed. */
  async recover(): Promise<void> {
    const { node } = this.parts
    const [pendingCount, latestCount] = await Promise.all([
      node.send<string>('eth_getTransactionCount', [this.address, 'pending']).then(Number),
      node.send<string>('eth_getTransactionCount', [this.address, 'latest']).then(Number),
    ])
    let next = pendingCount
    for (const { jobId, nonce } of await this.store.inflight(latestCount)) {
      next = Math.max(next, nonce + 1)
      const state = await this.store.load(jobId)
      const last = state.attempts.at(-1) ?? (await this.signOrphan(jobId, nonce, state.tx))
      // A refusal must not keep the sender from starting: the job's retry meets it again.
      await this.afterRefusal(jobId, nonce, state.attempts, node.broadcast(last.raw)).catch(
        this.parts.reportError,
      )
    }
    await this.store.setNextNonce(next)
    this.line.nextNonce = next
  }

  /**
   * A crash between allocating a nonce and recording the signed transaction leaves a hole that
   * blocks every later nonce, and the later jobs hold the worker's slots while they wait: sign the
   * job's transaction now (from the data stored with its nonce, or its queued data), or a filler if
   * the job is gone. Its retry then finds the attempt and only waits for it.
   */
  private async signOrphan(jobId: string, nonce: number, stored: unknown): Promise<TxAttempt> {
    const data = stored ?? (await this.parts.jobs.dataOf(jobId))
    const parsed = data === undefined ? undefined : jobDataSchema.safeParse(data)
    const tx = parsed?.success ? this.unsignedTx(parsed.data) : fillerTx(this.address)
    const attempt = await this.sign(
      tx,
      nonce,
      await this.parts.node.currentFees(),
      !parsed?.success,
    )
    await this.store.addAttempt(jobId, [attempt])
    return attempt
  }

  /**
   * Runs a job in this process, with no queue between the caller and the key's sender: a second
   * submit of the same job here joins the first. Crash safety comes from the store: the job's data
   * and nonce, then its signed attempt, are in Redis before anything leaves, and a caller that runs it
   * again (a redelivered run, in this process or another) finds them. A failure is retried as a
   * queued job's would be; one for good is recorded, so a first submission joins it.
   */
  runDirect(jobId: string, data: unknown, resubmit: boolean): Promise<TxResult> {
    const running = this.direct.get(jobId)
    if (running) return running
    this.leaseStale = true
    const run = this.retryDirect(jobId, data, resubmit).finally(() => this.direct.delete(jobId))
    this.direct.set(jobId, run)
    return run
  }

  /** Resolves once the jobs run here without a queue have ended. */
  async directSettled(): Promise<void> {
    this.closing = true
    await Promise.allSettled([...this.direct.values()])
  }

  /** Transactions to watch, or leases of runs to renew: the poll loop has something to look at. */
  get hasWork(): boolean {
    return this.confirmer.pending.size > 0 || this.direct.size > 0 || this.leaseStale
  }

  /**
   * Renews the leases of the jobs run here without a queue (so no other process fills their nonces)
   * when one started since the last renewal, or a third of the lease has gone by.
   */
  async renewLeases(): Promise<void> {
    const now = Date.now()
    const leaseMs = this.parts.settings.lockDurationMs
    if (this.direct.size === 0 && !this.leaseStale) return
    if (!this.leaseStale && now - this.leasedAt < leaseMs / 3) return
    this.leaseStale = false
    this.leasedAt = now
    await this.store.renewLeases([...this.direct.keys()], now + leaseMs, now)
  }

  /** Runs one job's transaction to its end: sent (or joined), mined and deep enough. */
  async process(
    jobId: string,
    jobData: unknown,
    mode: RunMode = { resubmit: false, direct: false },
  ): Promise<TxResult> {
    const data = jobDataSchema.parse(jobData)
    const tx = this.unsignedTx(data)
    let simulate = data.simulate === true
    for (;;) {
      try {
        return await this.runOnce(jobId, tx, simulate, mode, data)
      } catch (error) {
        if (!(error instanceof NonceTakenError)) throw error
        await this.store.forget(jobId)
        // Another transaction took the nonce: it may have been this job's, sent by another process.
        simulate = true
      }
    }
  }

  failAll(error: Error): void {
    this.confirmer.failAll(error)
  }

  private async retryDirect(jobId: string, data: unknown, resubmit: boolean): Promise<TxResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.process(jobId, data, { resubmit, direct: true })
      } catch (error) {
        const failed = error instanceof Error ? error : new Error(String(error))
        // A refusal for good is a stored error (JSON, as it is kept in Redis): revived as its kind.
        const failure = failed.message.startsWith('{') ? reviveErrorText(failed.message) : failed
        const where = withContext(`tx job ${jobId} from ${this.address}`, failure)
        this.parts.reportError(
          new FeedrunnerError(rootCauseFirst(where), { kind: where.kind, cause: failure }),
        )
        if (failed instanceof UnrecoverableError) {
          await this.store.markFailed(jobId, failed.message).catch(this.parts.reportError)
          throw failure
        }
        if (attempt >= DIRECT_ATTEMPTS || this.closing) return this.giveUp(jobId, failed)
        await delay(DIRECT_BACKOFF_MS * 2 ** (attempt - 1))
        if (this.closing) return this.giveUp(jobId, failed)
      }
    }
  }

  private unsignedTx(data: TxJobData): UnsignedTx {
    return {
      to: getAddress(data.to),
      data: data.data,
      gasLimit: data.gasLimit ?? this.parts.settings.defaultGasLimit,
      value: 0n,
    }
  }

  /** A direct job's last try failed: its nonce is no longer held by a live job (fillers may take it). */
  private async giveUp(jobId: string, error: Error): Promise<never> {
    await this.store.releaseLease(jobId).catch(this.parts.reportError)
    throw error
  }

  private async runOnce(
    jobId: string,
    tx: UnsignedTx,
    simulateFirst: boolean,
    mode: RunMode,
    data: TxJobData,
  ): Promise<TxResult> {
    const state = await this.store.load(jobId)
    if (state.failed !== undefined) {
      // A first submission joins the job's failure, as it joins a failed queued job.
      if (!mode.resubmit) throw new UnrecoverableError(state.failed)
      await this.store.clearFailed(jobId)
    }
    let attempts = state.attempts
    let nonce = state.nonce
    let outcome: TxResult | undefined
    let sentTx = tx
    if (attempts.length === 0) {
      // A job that holds a nonce but no signature lost it in a crash: by now its request may have
      // been answered, and the nonce is spent on a filler rather than on a revert.
      const reason =
        simulateFirst || nonce !== undefined
          ? await this.parts.node.simulate(this.address, tx)
          : undefined
      if (reason !== undefined) {
        outcome = {
          status: reason.includes(ALREADY_FULFILLED_REASON) ? 'already-fulfilled' : 'reverted',
          reason,
          from: this.address,
        }
        if (nonce === undefined) return outcome
        // A crash left this job holding a nonce it no longer needs; spend it so later ones can mine.
        sentTx = fillerTx(this.address)
      }
      const filler = outcome !== undefined
      const fees = await this.parts.node.currentFees()
      const signed = await this.line.signInOrder({
        jobId,
        tx: sentTx,
        nonce,
        fees,
        filler,
        ...(mode.direct ? { data } : {}),
      })
      nonce = signed.allocated
      attempts = [signed.attempt]
      this.counters.sent += 1
      await this.afterRefusal(jobId, nonce, [], signed.sending)
    } else {
      // Signed by an earlier run of this job: send the same bytes again, never a new nonce.
      if (nonce === undefined) throw new Error(`tx job ${jobId}: signed attempts without a nonce`)
      const last = attempts.at(-1) as TxAttempt
      if (last.filler) sentTx = fillerTx(this.address)
      await this.afterRefusal(jobId, nonce, attempts, this.parts.node.broadcast(last.raw))
    }

    const receipt = await this.confirmer.track(nonce, jobId, sentTx, attempts)
    await this.store.settle(jobId)
    if (attempts.at(-1)?.filler || sentTx !== tx) {
      return (
        outcome ?? {
          status: 'already-fulfilled',
          reason: 'nonce spent by a filler transaction',
          from: this.address,
        }
      )
    }
    return this.resultOf(receipt, nonce, tx)
  }

  /** The job's result from its mined receipt; a revert is replayed to learn its reason. */
  private async resultOf(receipt: RpcReceipt, nonce: number, tx: UnsignedTx): Promise<TxResult> {
    if (receipt.status !== '0x1') this.counters.reverted += 1
    return resultOfReceipt(receipt, nonce, this.address, (blockTag) =>
      this.parts.node.simulate(this.address, tx, blockTag).catch(() => undefined),
    )
  }

  /**
   * Waits for a broadcast of the job's transaction. Bytes the node refuses for good would leave the
   * job's nonce unused and every later transaction of the key behind it: the nonce goes to a filler,
   * and the job fails without retries, with the node's words. Other refusals are thrown as they are
   * (the job's retry sends the same bytes again).
   */
  private async afterRefusal(
    jobId: string,
    nonce: number,
    attempts: readonly TxAttempt[],
    sending: Promise<void>,
  ): Promise<void> {
    try {
      await sending
    } catch (error) {
      if (refusalOf(error) !== 'fatal') throw error
      const words = errorText(error).trim()
      const filled = await this.fillers.fillNonce(nonce, { jobId, attempts })
      const spent = filled
        ? `; its nonce ${nonce} went to a filler transaction, so the key's later transactions are not held back`
        : ''
      const refused = new FeedrunnerError(
        `the node refused the transaction for good: ${words}${spent}`,
        // No cause: the node's words are in the message already, right after what they mean.
        { kind: 'node_refused', retryable: false },
      )
      // The failed job's reason is the error stored with its kind; submit() revives it.
      throw new UnrecoverableError(JSON.stringify(serialiseError(refused)))
    }
  }
}
