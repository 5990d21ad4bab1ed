import type { FaultWindow, FulfilmentFact, History, RequestFact, Violation } from './history.ts'

// The fulfilments the chain mined, per request: every transaction from a node key calling a
// fulfilment, read from the blocks, succeeded or reverted.

const short = (id: string) => id.slice(0, 10)

export const describeRequest = (request: RequestFact) =>
  `request ${short(request.requestId)} (${request.purpose ?? 'not the harness'}, block ${request.block})`

/**
 * Each request has at most one fulfilment on chain, and it succeeded: every transaction from a node
 * key that calls a fulfilment for it counts, reverted or not (a fee bump is the same nonce, so the
 * chain holds one of them). A reverted one is left out only where the node could not have known
 * (revertExcuse).
 */
export function oneFulfilmentEach(history: History): Violation[] {
  const requests = new Map(history.requests.map((request) => [request.requestId, request]))
  const fulfilments = new Map<string, FulfilmentFact[]>()
  for (const tx of history.fulfilments)
    fulfilments.set(tx.requestId, [...(fulfilments.get(tx.requestId) ?? []), tx])
  const violations: Violation[] = []
  for (const [requestId, txs] of fulfilments) {
    const request = requests.get(requestId)
    const counted = txs.filter(
      (tx) => !(tx.reverted && revertExcuse(tx, request, history) !== undefined),
    )
    const id = request ? describeRequest(request) : `request ${short(requestId)} (not on chain)`
    if (counted.length > 1)
      violations.push({
        invariant: 'one-fulfilment',
        detail: `${id} has ${counted.length} fulfilments on chain: ${counted.map((tx) => describeFulfilment(tx, request)).join('; ')}`,
      })
    else if (counted[0]?.reverted)
      violations.push({
        invariant: 'fulfilment-reverted',
        detail: `${id}: its fulfilment reverted, and neither a cancel nor a reorg explains it: ${describeFulfilment(counted[0], request)}`,
      })
  }
  return violations
}

/**
 * Why a reverted fulfilment is one the node could not have avoided, or undefined. It simulates every
 * fulfilment just before signing it, so only a change the simulation could not see explains a
 * revert. Either the requester's cancel was mined after the head at which the node sent it (the
 * proxy read that head as the transaction passed: at or after the one simulated) and before the
 * fulfilment itself; or a reorg mined the request again with another cancelExpiration (or after the
 * fulfilment) once the fulfilment was out: it answers a version of the request the chain no longer
 * holds, it was sent before that reorg ended, and it was mined in a block the reorg replaced or
 * later, not after the reorg dropped it (then the node sent it again, knowing).
 */
export function revertExcuse(
  tx: FulfilmentFact,
  request: RequestFact | undefined,
  history: History,
): string | undefined {
  const sentAtHead = tx.sentAtHead
  const cancel = history.cancels.find(
    (cancel) =>
      cancel.requestId === tx.requestId &&
      sentAtHead !== undefined &&
      cancel.block > sentAtHead &&
      before(cancel, tx),
  )
  if (cancel)
    return `the requester's cancel was mined in block ${cancel.block}, after head ${sentAtHead}`
  if (!request) return undefined
  const other =
    tx.expiration !== request.cancelExpiration
      ? `it answers expiration ${tx.expiration}, the request's is ${request.cancelExpiration}`
      : before(tx, request)
        ? `it was mined before the request (block ${request.block})`
        : undefined
  const reorg = other === undefined ? undefined : reorgAfterSend(tx, history)
  return (
    reorg &&
    `${other}: the reorg from block ${reorg.fromBlock} mined the request again after it was sent`
  )
}

/**
 * A reorg that ended after `tx` was first sent and replaced blocks up to the one it was mined in: the
 * chain it was simulated on is gone. Bytes the reorg dropped (neither mined again nor back in the
 * pool) were mined later only because the node sent them again after it, when a simulation would
 * have told it they revert: no reorg explains those.
 */
export function reorgAfterSend(
  tx: { hash: string; block: number; sentAt?: number },
  history: Pick<History, 'faults' | 'gone'>,
): FaultWindow | undefined {
  const sentAt = tx.sentAt
  if (sentAt === undefined || history.gone.has(tx.hash)) return undefined
  return history.faults.find(
    (fault) =>
      fault.kind === 'reorg' &&
      fault.fromBlock !== undefined &&
      sentAt <= fault.toMs &&
      tx.block >= fault.fromBlock,
  )
}

/** `a` was mined before `b` (an earlier block, or earlier in the same one). */
function before(a: { block: number; index: number }, b: { block: number; index: number }): boolean {
  return a.block < b.block || (a.block === b.block && a.index < b.index)
}

function describeFulfilment(tx: FulfilmentFact, request: RequestFact | undefined): string {
  const sent =
    tx.sentAtHead === undefined ? 'never seen by the proxy' : `sent at head ${tx.sentAtHead}`
  const other =
    request && tx.expiration !== request.cancelExpiration
      ? `, for expiration ${tx.expiration} (the request's is ${request.cancelExpiration})`
      : ''
  return `${short(tx.hash)} by key ${short(tx.from)} nonce ${tx.nonce}, ${sent}, block ${tx.block}${other}${tx.reverted ? ', reverted' : ''}`
}
