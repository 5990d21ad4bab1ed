import { setTimeout as delay } from 'node:timers/promises'
import {
  pooledNonces,
  transactionCounts,
  waitForPooledMined,
  type RpcSend,
} from '../pooled-transactions.ts'
import type { Logger } from '../../config/logger.ts'
import type { Confirmer } from './confirmer.ts'
import type { PendingTx } from './pending-tx.ts'
import { HandedOverError, storedTx } from './model.ts'
import type { SenderNode } from './node-client.ts'
import { isFatalRefusal } from './node-refusal.ts'
import type { TxAttempt, TxStore } from './tx-store.ts'

export interface KeyRecoveryParts {
  address: string
  fence: string
  node: Pick<SenderNode, 'send' | 'broadcastBatch'>
  store: TxStore
  confirmer: Confirmer
  /** The next nonce this process knew of the key (0 if it never owned it): never stepped back from. */
  memoryNext: number
  /** How long to wait for the node's pool to empty of the key's transactions when Redis lost them. */
  drainBoundMs: number
  /** How long an owner before a loss of Redis may still send: the key's lease (waitOutEarlierOwner). */
  lossWaitMs: number
  /** Where the wait for an earlier owner is told. */
  logger?: Pick<Logger, 'info'>
  pollIntervalMs: number
  /** The key let go meanwhile: the wait for the pool ends, and nothing is recovered. */
  released?: AbortSignal
  /** Spends a nonce nobody will send on a filler (false when it is not to be had). */
  fillNonce: (nonce: number) => Promise<boolean>
  /**
   * Whether an in-flight transaction's bytes may go again now (the resend guard, as for every other
   * resend): false when its nonce went to a filler or it is held until its request is back.
   */
  mayGo: (entry: PendingTx) => Promise<boolean>
  /** An in-flight transaction the node now refuses for good: its nonce goes to a filler. */
  onFatalRefusal: (entry: {
    nonce: number
    jobId: string
    attempts: TxAttempt[]
  }) => Promise<unknown>
}

/**
 * What the key's new owner does before it signs anything (Chainlink's nonce syncer): the key's next
 * nonce is the greatest of the one stored in Redis, the node's pending count, the highest nonce
 * recorded in flight plus one, and the one this process knew; it is written back under the fence, so
 * it never steps back. Every transaction recorded in flight is sent again (the same bytes) and
 * watched until final, whoever sent it first.
 *
 * When Redis holds nothing of the key (it lost its state) while the node's pool still holds the key's
 * transactions, those are left to be mined first (up to drainBoundMs): their fulfilments are on the
 * chain before any request is looked at again, so none is sent twice.
 */
export async function recoverKey(parts: KeyRecoveryParts): Promise<number> {
  const { address, store, node } = parts
  const send: RpcSend = (method, params) => node.send(method, params)
  const [stored, inflight] = await Promise.all([store.nextNonce(address), store.inflight(address)])
  // Redis holds nothing of the key: what the pool holds of it is mined first (one read when nothing),
  // the gaps below what it holds queued filled first, or it never is.
  const lost = stored === undefined && inflight.length === 0
  if (lost) await waitOutEarlierOwner(parts, send)
  const pooled = lost ? await fillGapsBelowPooled(parts, send) : undefined
  const { pending, latest } = lost
    ? (
        await waitForPooledMined(send, [address], {
          boundMs: parts.drainBoundMs,
          pollIntervalMs: parts.pollIntervalMs,
          signal: parts.released,
          ...(pooled ? { pooled } : {}),
        })
      ).counts[0]!
    : await transactionCounts(send, address)
  const pooledTo = (pooled?.get(address.toLowerCase())?.at(-1) ?? -1) + 1
  if (parts.released?.aborted)
    throw new HandedOverError(`sender key ${address} was let go meanwhile`)
  parts.confirmer.knowMinedCount(latest)
  const highestInflight = Math.max(-1, ...inflight.map((entry) => entry.nonce))
  const next = await store.syncNonce(
    address,
    parts.fence,
    Math.max(stored ?? 0, pending, pooledTo, highestInflight + 1, parts.memoryNext),
  )
  if (next === undefined) throw new HandedOverError(`sender key ${address} was taken meanwhile`)
  await watchInflight(parts, inflight)
  await watchMinedBefore(parts)
  return next
}

/**
 * Redis holding nothing of a key the chain shows in use is a loss (a restart without persistence, a
 * FLUSHALL), and the key's owner before it may not know yet: it hears at its next renewal (a third
 * of a lease) and posts nothing after, but a broadcast it posted before can still be on its way. Read
 * at once, the node's counts and pool would not hold it, and this owner would sign other transactions
 * at its nonces: one nonce handed out twice. So, as a lock server waits out a lock whose holder may
 * still believe it has it, this owner waits one lease before it reads what the node holds. A key
 * that never sent (a count of 0: a first start) has no owner before to wait for.
 */
async function waitOutEarlierOwner(parts: KeyRecoveryParts, send: RpcSend): Promise<void> {
  const { pending } = await transactionCounts(send, parts.address)
  if (pending === 0 || parts.lossWaitMs <= 0) return
  parts.logger?.info(
    { address: parts.address, waitMs: parts.lossWaitMs },
    `Redis holds nothing of sender key ${parts.address}, which the chain shows in use: waiting one ` +
      `key lease (${parts.lossWaitMs} ms) for an owner before the loss to stop sending`,
  )
  await delay(parts.lossWaitMs, undefined, { signal: parts.released }).catch(() => undefined)
  if (parts.released?.aborted)
    throw new HandedOverError(`sender key ${parts.address} was let go meanwhile`)
}

/**
 * What the node's pool holds of the key when Redis lost its record of it, with every nonce below the
 * highest one held and not held (a gap: the transaction there never reached the node, or the node
 * dropped it) spent on a filler: the ones queued above it were sent by an owner before, and may
 * answer requests; while the gap stays they are never mined, the requests look open, and whoever
 * spends the nonce next (this owner, at the key's mined count) lets them be mined beside a second
 * answer. Undefined when the node does not tell what its pool holds.
 */
async function fillGapsBelowPooled(
  parts: KeyRecoveryParts,
  send: RpcSend,
): Promise<Map<string, number[]> | undefined> {
  const pooled = await pooledNonces(send, [parts.address])
  const held = new Set(pooled?.get(parts.address.toLowerCase()) ?? [])
  if (held.size === 0) return pooled
  const { latest } = await transactionCounts(send, parts.address)
  for (let nonce = latest; nonce < Math.max(...held); nonce++)
    if (!held.has(nonce) && !(await parts.fillNonce(nonce))) break
  return pooled
}

/**
 * Watches what the key's owners before mined less than CHAIN_FINALITY_DEPTH deep: a reorg that takes
 * one away after a hand-over is seen by this owner, who sends it again.
 */
async function watchMinedBefore(parts: KeyRecoveryParts): Promise<void> {
  for (const { jobId, minedIn } of await parts.store.mined(parts.address)) {
    const record = await parts.store.loadBound(parts.address, jobId)
    if (!record || record.attempts.length === 0) continue
    parts.confirmer.watchMinedBefore(
      record.nonce,
      jobId,
      storedTx(parts.address, record.tx),
      record.attempts,
      minedIn,
    )
  }
}

/**
 * Watches every recorded in-flight transaction until final, and sends its last attempt again, in nonce
 * order, where the resend guard lets it go (a request a reorg took away holds its bytes).
 */
async function watchInflight(
  parts: KeyRecoveryParts,
  inflight: ReadonlyArray<{ jobId: string; nonce: number }>,
): Promise<void> {
  const watched: Array<{ nonce: number; jobId: string; attempts: TxAttempt[] }> = []
  for (const { jobId, nonce } of inflight) {
    // A filler claimed but not signed (a crash between the two) is a hole the fillers find again; a
    // job bound again elsewhere after Redis lost its record is not this key's to send.
    const record = await parts.store.loadBound(parts.address, jobId, nonce)
    if (!record || record.attempts.length === 0) continue
    const entry = parts.confirmer.watch(
      nonce,
      jobId,
      storedTx(parts.address, record.tx),
      record.attempts,
    )
    if (await parts.mayGo(entry)) watched.push({ nonce, jobId, attempts: record.attempts })
  }
  if (watched.length === 0) return
  const outcomes = await parts.node.broadcastBatch(
    watched.map((entry) => ['eth_sendRawTransaction', [(entry.attempts.at(-1) as TxAttempt).raw]]),
  )
  for (const [index, outcome] of outcomes.entries())
    if (!outcome.ok && isFatalRefusal(outcome.message)) await parts.onFatalRefusal(watched[index]!)
}
