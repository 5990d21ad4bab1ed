import type { Logger } from '../../config/logger.ts'
import { operatorClosedIt } from '../request-fate.ts'
import type { PendingTx } from './pending-tx.ts'
import type { Fillers } from './fillers.ts'
import { FILLER_ID_PREFIX, type KeyCounters } from './model.ts'
import type { SenderNode } from './node-client.ts'
import type { TxAttempt, TxStore } from './tx-store.ts'

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
 * listener sees it made again) answers it. A simulation that finds no commitment at all ("Must have
 * a valid requestId": the request not on the chain yet, or answered, by these very bytes too) lets
 * them go: the request may come back with the same parameters, and then only they answer it.
 */
export class ResendGuard {
  constructor(private readonly parts: ResendGuardParts) {}

  /** Sends the entries' last attempts again, but those the chain would surely refuse: answers how many went. */
  async sendAgain(entries: readonly PendingTx[], why: string): Promise<number> {
    const again: PendingTx[] = []
    for (const entry of entries) if (!(await this.withdrawnIfRefused(entry, why))) again.push(entry)
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
  async sendAgainAfterReorg(
    reorged: readonly { entry: PendingTx; minedIn: number }[],
  ): Promise<void> {
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

  /** True when the chain would surely refuse the entry's transaction now: its nonce went to a filler. */
  async withdrawnIfRefused(entry: PendingTx, why: string): Promise<boolean> {
    const refusal = await this.refusal(entry)
    if (refusal === undefined) return false
    const { address, logger } = this.parts
    logger?.warn(
      { address, nonce: entry.nonce, job: entry.jobId, reason: refusal },
      `${why}: the chain would now revert the transaction of nonce ${entry.nonce} of ${address} (${refusal}), so its nonce goes to a filler instead of the same bytes`,
    )
    await this.parts.fillers.fillNonce(entry.nonce, {
      jobId: entry.jobId,
      attempts: entry.attempts,
    })
    return true
  }

  /** Why the chain would revert the entry's transaction, where it surely would; undefined otherwise. */
  private async refusal(entry: PendingTx): Promise<string | undefined> {
    if (entry.jobId.startsWith(FILLER_ID_PREFIX)) return undefined
    // A node that does not answer the simulation now: the bytes go, as before there was one.
    const reason = await this.parts.node
      .simulate(this.parts.address, entry.tx)
      .catch(() => undefined)
    if (reason === undefined || operatorClosedIt(reason)) return undefined
    return reason
  }
}

function lastAttempt(entry: PendingTx): TxAttempt {
  return entry.attempts.at(-1) as TxAttempt
}
