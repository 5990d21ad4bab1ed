import type { CancelRequestEvent } from './operator.ts'
import {
  ALREADY_FULFILLED_REASON,
  CANCEL_ORACLE_REQUEST_TOPIC,
  ORACLE_RESPONSE_TOPIC,
} from './operator.ts'
import { readLogsInRanges, type LogSource } from './operator-logs.ts'

/**
 * A request's fate, decided here and nowhere else: whether it is open, answered (by which
 * transaction), cancelled by its requester, or past its cancelExpiration. The chain is the truth:
 * the Operator's `OracleResponse` and `CancelOracleRequest` logs, read by the one bounded, paged
 * reader (operator-logs.ts), and the chain's time. The listener, the intake, the sender's check
 * before it signs, recovery, the reconciler and `runs replay` each ask here and act on the answer.
 */

/** How the chain closed a request, and by which transaction. */
export interface Closure {
  state: 'fulfilled' | 'cancelled'
  txHash: string
  blockNumber: number
}

export type RequestFate = Closure | { state: 'open' } | { state: 'expired' }

/**
 * The requests the Operators closed between `fromBlock` and `toBlock` (both included), by request id
 * (lower case): answered (`OracleResponse`) or cancelled by their requesters
 * (`CancelOracleRequest`). A request's first closing log is its fate: its commitment is gone after it.
 */
export async function closuresBetween(
  provider: LogSource,
  query: {
    operators: readonly string[]
    fromBlock: number
    toBlock: number
    /** Only this request's logs (both events index the request id). */
    requestId?: string
    rangeBlocks?: number
  },
): Promise<Map<string, Closure>> {
  const logs = await readLogsInRanges(provider, {
    address: query.operators,
    topics: [
      [ORACLE_RESPONSE_TOPIC, CANCEL_ORACLE_REQUEST_TOPIC],
      ...(query.requestId ? [query.requestId] : []),
    ],
    fromBlock: query.fromBlock,
    toBlock: query.toBlock,
    rangeBlocks: query.rangeBlocks,
  })
  const closed = new Map<string, Closure>()
  for (const log of logs) {
    const requestId = log.topics[1]?.toLowerCase()
    if (requestId === undefined || closed.has(requestId)) continue
    closed.set(requestId, {
      state: log.topics[0] === ORACLE_RESPONSE_TOPIC ? 'fulfilled' : 'cancelled',
      txHash: log.transactionHash,
      blockNumber: log.blockNumber,
    })
  }
  return closed
}

/** How the Operator closed `requestId` from `fromBlock` up to the head; undefined while it is open. */
export async function closureOf(
  provider: LogSource,
  request: { operator: string; requestId: string; fromBlock: number; rangeBlocks?: number },
): Promise<Closure | undefined> {
  const closed = await closuresBetween(provider, {
    operators: [request.operator],
    requestId: request.requestId,
    fromBlock: request.fromBlock,
    toBlock: await provider.getBlockNumber(),
    rangeBlocks: request.rangeBlocks,
  })
  return closed.get(request.requestId.toLowerCase())
}

/**
 * Whether a request is past its cancelExpiration at `chainTime` (unix seconds, the chain's: a block's
 * timestamp): its requester may cancel it and take the payment back at any moment from then on.
 */
export function isExpired(cancelExpiration: bigint, chainTime: number | bigint): boolean {
  return BigInt(chainTime) >= cancelExpiration
}

/**
 * Whether a request gets no new fulfilment: past its cancelExpiration with no transaction of its run
 * out yet. One with a transaction out (a run that sent, then stopped: its process closed or died) is
 * resumed whatever the time: that transaction may be mined, and the run must end as the chain says.
 */
export async function expiredUnsent(
  cancelExpiration: bigint | undefined,
  chain: { chainTime: () => Promise<number>; transactionOut: () => Promise<boolean> },
): Promise<boolean> {
  if (cancelExpiration === undefined) return false
  if (!isExpired(cancelExpiration, await chain.chainTime())) return false
  return !(await chain.transactionOut())
}

/**
 * The fate of a request from how the chain closed it (its logs) and whether it is past its
 * cancelExpiration: a closure wins (an answer or a cancel is final), then the expiry.
 */
export function fateOf(closure: Closure | undefined, expired: boolean): RequestFate {
  if (closure) return closure
  return expired ? { state: 'expired' } : { state: 'open' }
}

/** A confirmed `CancelOracleRequest`: the request's fate is cancelled, by that transaction. */
export function cancelClosure(event: CancelRequestEvent): Closure {
  return { state: 'cancelled', txHash: event.txHash, blockNumber: event.blockNumber }
}

/**
 * Whether a simulated or mined fulfilment's revert says the Operator holds no commitment for the
 * request any more ("Must have a valid requestId"): answered or cancelled since; its logs say which.
 */
export function operatorClosedIt(revertReason: string): boolean {
  return revertReason.includes(ALREADY_FULFILLED_REASON)
}

/**
 * The cancels among a range's events, by request id: a request cancelled in the range it was made in
 * is not delivered at all (the cancel is final once it is as deep as the most careful job wants).
 */
export function cancelsByRequest<Event extends { kind: string; requestId: string }>(
  events: readonly Event[],
): Map<string, Event> {
  return new Map(
    events.filter((event) => event.kind === 'cancel').map((event) => [event.requestId, event]),
  )
}

/** The run record's words for a closure read from the chain. */
export function chainShows(closure: Closure): string {
  return `the chain shows it ${closure.state} in ${closure.txHash}`
}
