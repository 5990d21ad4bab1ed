import type { Logger } from '../../config/logger.ts'
import { operatorClosedIt } from '../request-fate.ts'
import type { PendingTx, ReorgedTx } from './pending-tx.ts'
import type { Fillers } from './fillers.ts'
import { FILLER_ID_PREFIX } from './model.ts'
import type { KeyCounters } from './types.ts'
import type { SenderNode } from './node-client.ts'
import type { TxAttempt, TxStore } from './tx-store.ts'

/** Looks an entry whose request is not on chain is held for before its nonce goes to a filler. */
export const HOLD_LOOKS = 3

export interface ResendGuardParts {
  address: string
  node: Pick<SenderNode, 'simulate' | 'broadcastBatch'>
  store: Pick<TxStore, 'unsettle'>
  counters: KeyCounters
  fillers: Pick<Fillers, 'fillNonce'>
  logger?: Pick<Logger, 'warn'>
}

/**
 * Bytes signed earlier go out again only while the chain would still take them: a stalled
 * transaction sent again or bumped, one a reorg took away. Each is simulated on the chain as it is
 * now, as a new one is just before it is signed. A request a reorg made again with other parameters
 * (a later block, so another cancelExpiration: "Params do not match request ID") can never be
 * answered by those bytes: sent, they would only revert, paid for. Their nonce goes to a filler
 * instead (priced above them, so one still in a pool is replaced), and the request's new round (the
 * listener sees it made again) answers it.
 *
 * A simulation that finds no commitment at all ("Must have a valid requestId") cannot tell which
 * it will be: the reorg took the request away with its answer, and it may come back as it was
 * (then only these bytes answer it) or in a block with another timestamp (then they revert, and a
 * chain that puts the request and the bytes back in one block mines that revert). So the bytes are
 * held: not sent, their nonce kept, and looked at again each time the key's sender looks at what it
 * waits for; they go once the request is back as they signed it, and their nonce goes to a filler
 * once it is back otherwise, or after HOLD_LOOKS looks with no request (answered by another
 * transaction, or never made again): the key's later transactions wait that long at most.
 */
export class ResendGuard {
  /** Entries held for their request, by nonce: the job, and how many looks it was held for. */
  private readonly held = new Map<number, { jobId: string; looks: number }>()

  constructor(private readonly parts: ResendGuardParts) {}

  /** Sends the entries' last attempts again, but those the chain would surely refuse: answers how many went. */
  async sendAgain(entries: readonly PendingTx[], why: string): Promise<number> {
    const again: PendingTx[] = []
    for (const entry of entries) if (await this.mayGo(entry, why)) again.push(entry)
    if (again.length > 0)
      await this.parts.node.broadcastBatch(
        again.map((entry) => ['eth_sendRawTransaction', [lastAttempt(entry).raw]]),
      )
    return again.length
  }

  /**
   * Mined transactions a reorg took away: in flight again in Redis (their results go, so a run of
   * their jobs waits for them again, and a new owner of the key watches them), then sent again, the
   * same bytes, in nonce order, unless the new chain would revert them. The confirmer watches them
   * from here as any other.
   */
  async sendAgainAfterReorg(reorged: readonly ReorgedTx[]): Promise<void> {
    const { address, store, logger } = this.parts
    for (const { entry, minedIn } of reorged) {
      await store.unsettle(address, entry)
      logger?.warn(
        { address, nonce: entry.nonce, job: entry.jobId, minedIn },
        `a reorg took away the transaction of nonce ${entry.nonce} of ${address} (mined in block ${minedIn}): sending it again, the same bytes, if the new chain takes them`,
      )
    }
    this.parts.counters.reorgedOut += reorged.length
    await this.sendAgain(
      reorged.map(({ entry }) => entry),
      'a reorg took away a mined transaction',
    )
  }

  /**
   * True when the entry's bytes (or a bump of them) may go now; false when its nonce went to a
   * filler (the chain would surely refuse them) or it is held until its request is back.
   */
  async mayGo(entry: PendingTx, why: string): Promise<boolean> {
    const refusal = await this.refusal(entry)
    const held = this.held.get(entry.nonce)
    const looks = held?.jobId === entry.jobId ? held.looks : 0
    if (refusal === undefined) {
      this.held.delete(entry.nonce)
      return true
    }
    const { address, logger } = this.parts
    if (refusal.requestAway && looks < HOLD_LOOKS) {
      this.held.set(entry.nonce, { jobId: entry.jobId, looks: looks + 1 })
      this.parts.counters.held += 1
      if (looks === 0)
        logger?.warn(
          { address, nonce: entry.nonce, job: entry.jobId },
          `${why}: the request that the transaction of nonce ${entry.nonce} of ${address} answers is not on chain now (${refusal.reason}), so it is held until the request is back, at most ${HOLD_LOOKS} looks`,
        )
      return false
    }
    this.held.delete(entry.nonce)
    logger?.warn(
      { address, nonce: entry.nonce, job: entry.jobId, reason: refusal.reason },
      `${why}: the chain would now revert the transaction of nonce ${entry.nonce} of ${address} (${refusal.reason}), so its nonce goes to a filler instead of the same bytes`,
    )
    await this.parts.fillers.fillNonce(entry.nonce, {
      jobId: entry.jobId,
      attempts: entry.attempts,
    })
    return false
  }

  /**
   * Why the chain would revert the entry's transaction now, where it would; undefined when it would
   * not, or cannot be asked. `requestAway`: no commitment for the request at all.
   */
  private async refusal(
    entry: PendingTx,
  ): Promise<{ reason: string; requestAway: boolean } | undefined> {
    if (entry.jobId.startsWith(FILLER_ID_PREFIX)) return undefined
    // A node that does not answer the simulation now: the bytes go, as before there was one.
    const reason = await this.parts.node
      .simulate(this.parts.address, entry.tx)
      .catch(() => undefined)
    if (reason === undefined) return undefined
    return { reason, requestAway: operatorClosedIt(reason) }
  }
}

function lastAttempt(entry: PendingTx): TxAttempt {
  return entry.attempts.at(-1) as TxAttempt
}
