import type { Queue } from 'bullmq'
import type { Provider } from 'ethers'
import { FeedrunnerError } from '../config/errors.ts'
import { operatorInterface, type OracleRequestEvent } from '../chain/operator.ts'
import { closureOf, fateOf, isExpired } from '../chain/request-fate.ts'
import { readOracleRequest } from '../chain/request-log.ts'
import { revertReasonOf } from '../chain/revert.ts'
import type { SharedClock } from '../metrics/index.ts'
import { requestJobId, toRequestPayload, type RequestPayload } from './request-payload.ts'
import { addRequestJob } from './requests-queue.ts'
import { BY_HAND } from './quarantine.ts'
import type { RunStore } from './run-record.ts'

/** Where a request stands at its Operator, read from the chain. */
export type RequestStanding =
  | { open: true; secondsLeft: number }
  | { open: false; why: 'fulfilled' | 'cancelled' | 'expired' | 'gone'; message: string }

// The Operator's own words (Operator.sol cancelOracleRequest): a commitment that is still there but
// not yet cancellable, and one that is not there (or not this one).
const NOT_EXPIRED = 'Request is not expired'
const NO_COMMITMENT = 'Params do not match request ID'

/**
 * Whether the Operator still holds the request open: no OracleResponse or CancelOracleRequest for it,
 * its cancelExpiration not reached, and its commitment there. The commitment is private in the
 * Operator, so it is read by simulating the requester's cancelOracleRequest: "Request is not expired"
 * means the commitment matches and still stands.
 */
export async function requestStanding(
  provider: Provider,
  event: OracleRequestEvent,
  rangeBlocks?: number,
): Promise<RequestStanding> {
  const request = `request ${event.requestId}`
  const closure = await closureOf(provider, {
    operator: event.operator,
    requestId: event.requestId,
    fromBlock: event.blockNumber,
    rangeBlocks,
  })
  const head = await provider.getBlock('latest')
  const now = BigInt(head?.timestamp ?? 0)
  const fate = fateOf(closure, isExpired(event.cancelExpiration, now))
  if (fate.state === 'fulfilled')
    return {
      open: false,
      why: 'fulfilled',
      message: `${request} was fulfilled in transaction ${fate.txHash} (block ${fate.blockNumber}): the Operator paid for it once, nothing is left to replay`,
    }
  if (fate.state === 'cancelled')
    return {
      open: false,
      why: 'cancelled',
      message: `${request} was cancelled by its requester in transaction ${fate.txHash}: its payment went back, nothing is left to replay`,
    }
  if (fate.state === 'expired')
    return {
      open: false,
      why: 'expired',
      message: `${request} passed its cancelExpiration at ${isoTime(event.cancelExpiration)}: its requester may cancel it and take its payment back at any moment, so it is not replayed; the consumer can call cancelOracleRequest and ask again`,
    }
  const commitment = await simulateCancel(provider, event)
  if (commitment === NO_COMMITMENT)
    return {
      open: false,
      why: 'gone',
      message: `${request} has no commitment at the Operator ${event.operator} any more: it was answered or cancelled`,
    }
  if (commitment !== NOT_EXPIRED)
    throw new FeedrunnerError(
      `cannot tell whether ${request} is still open: the Operator's cancelOracleRequest simulation answered ${commitment}`,
      { kind: 'upstream' },
    )
  return { open: true, secondsLeft: Number(event.cancelExpiration - now) }
}

async function simulateCancel(provider: Provider, event: OracleRequestEvent): Promise<string> {
  try {
    await provider.call({
      from: event.callbackAddr,
      to: event.operator,
      data: operatorInterface.encodeFunctionData('cancelOracleRequest', [
        event.requestId,
        event.payment,
        event.callbackFunctionId,
        event.cancelExpiration,
      ]),
    })
    return 'success'
  } catch (error) {
    const reason = revertReasonOf(error)
    if (reason === undefined) throw error
    return reason
  }
}

export interface ReplayParts {
  runs: RunStore
  requestsQueue: Queue
  provider: Provider
  /** Redis's clock, which stamps the job (addRequestJob). */
  clock: SharedClock
  /** The widest eth_getLogs range (CHAIN_LOG_RANGE_BLOCKS). */
  logRangeBlocks?: number
}

export interface Replay {
  replay: number
  secondsLeft: number
  job: string
}

/**
 * Runs an errored run again, after its cause was fixed, while its request is still open on chain: the
 * same request (no new one, no second payment) goes back to the `requests` queue under a job id of
 * its own, and the runner's workers run it with the specs and settings they have now. Refuses, saying
 * why, a run that did not error or a request that was fulfilled, cancelled or has expired.
 */
export async function replayRun(requestId: string, parts: ReplayParts): Promise<Replay> {
  const run = await parts.runs.get(requestId)
  if (!run)
    throw new FeedrunnerError(
      `no run for request ${requestId}: feedrunner status lists the latest runs`,
      { kind: 'bad_input' },
    )
  if (run.trigger === 'tick' || run.trigger === 'call')
    throw new FeedrunnerError(
      `run ${run.requestId} is a ${run.trigger === 'tick' ? 'cron tick' : 'webhook call'}'s, which runs replay does not run again: ${BY_HAND[run.trigger]}`,
      { kind: 'bad_input' },
    )
  if (run.state !== 'errored')
    throw new FeedrunnerError(
      `the run of request ${run.requestId} is ${run.state}${run.txHash ? ` (transaction ${run.txHash})` : ''}: only an errored run is replayed`,
      { kind: 'bad_input' },
    )
  const event = await readOracleRequest(parts.provider, {
    txHash: run.requestTxHash,
    requestId: run.requestId,
  })
  const standing = await requestStanding(parts.provider, event, parts.logRangeBlocks)
  if (!standing.open) throw new FeedrunnerError(standing.message, { kind: 'bad_input' })
  const reopened = await parts.runs.reopenForReplay(run.requestId)
  if (!reopened || reopened.replay === 0)
    throw new FeedrunnerError(
      `the run of request ${run.requestId} is ${reopened?.run.state ?? 'gone'} now: another replay took it`,
      { kind: 'bad_input' },
    )
  const payload: RequestPayload = { ...toRequestPayload(event), replay: reopened.replay }
  const jobId = `${requestJobId(event.chainId, event.operator, event.requestId)}-replay-${reopened.replay}`
  await addRequestJob(parts.requestsQueue, payload, jobId, parts.clock)
  return { replay: reopened.replay, secondsLeft: standing.secondsLeft, job: run.job }
}

function isoTime(unixSeconds: bigint): string {
  return new Date(Number(unixSeconds) * 1000).toISOString()
}
