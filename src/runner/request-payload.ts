import { z } from 'zod'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { oracleRequestMeta, type OracleRequest, type RecordedRequest } from '../pipeline/index.ts'

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/, { message: 'expected 0x hex' })
const decimal = z.string().regex(/^\d+$/, { message: 'expected a decimal integer string' })

/**
 * The `requests` queue payload: an `OracleRequest` log as the listener decoded it, JSON-safe (bigints
 * as decimal strings). It holds only what is on chain already: no key can be in it.
 */
export const requestPayloadSchema = z.object({
  kind: z.literal('request'),
  chainId: z.number().int().positive(),
  operator: hex,
  blockNumber: z.number().int().nonnegative(),
  blockHash: hex,
  txHash: hex,
  logIndex: z.number().int().nonnegative(),
  topics: z.array(hex),
  logData: hex,
  specId: hex,
  requester: hex,
  requestId: hex,
  payment: decimal,
  callbackAddr: hex,
  callbackFunctionId: hex,
  cancelExpiration: decimal,
  dataVersion: decimal,
  data: hex,
  /** Set by `runs replay`: the number of this replay of the request's errored run. */
  replay: z.number().int().positive().optional(),
  /** Runs of the request whose isolate died under a task (its runner's deaths are BullMQ's stalls). */
  crashes: z.number().int().nonnegative().optional(),
  /** The request's round: how many times it was made again (a reorg moved it; run-record.ts). */
  round: z.number().int().positive().optional(),
})
export type RequestPayload = z.infer<typeof requestPayloadSchema>

export function toRequestPayload(event: OracleRequestEvent): RequestPayload {
  return {
    ...event,
    payment: event.payment.toString(),
    cancelExpiration: event.cancelExpiration.toString(),
    dataVersion: event.dataVersion.toString(),
  }
}

/** A `requests` job's payload, checked once: the request, and which replay and round of it. */
export interface ReadPayload {
  request: OracleRequestEvent
  /** The number of this `runs replay` of the request's errored run; undefined for a first run. */
  replay?: number
  /** The request's round (made again after a reorg); undefined for the request as first made. */
  round?: number
}

export function readRequestPayload(payload: unknown): ReadPayload {
  const { replay, crashes: _crashes, round, ...parsed } = requestPayloadSchema.parse(payload)
  const request = {
    ...parsed,
    payment: BigInt(parsed.payment),
    cancelExpiration: BigInt(parsed.cancelExpiration),
    dataVersion: BigInt(parsed.dataVersion),
  }
  return { request, replay, round }
}

/**
 * One queue job per request, whichever process saw the log first: the id is derived from the chain,
 * the operator and the request id (BullMQ reserves `:` in custom ids, hence `-`).
 */
export function requestJobId(
  chainId: number,
  operator: string,
  requestId: string,
  round?: number,
): string {
  const base = `${chainId}-${operator.toLowerCase()}-${requestId.toLowerCase()}`
  // A request made again after a reorg is a new unit of work: its fulfilment differs.
  return round ? `${base}-r${round}` : base
}

/**
 * The `jobRun.*` variables of a request's run, as Chainlink's directrequest delegate gives them:
 * the log's, and `meta.oracleRequest` with the request's fields (a bridge task sends `meta` on, as a
 * node's does).
 */
export function jobRunVars(request: OracleRequestEvent): Record<string, unknown> {
  return {
    logData: request.logData,
    logTopics: request.topics,
    logAddress: request.operator,
    logBlockHash: request.blockHash,
    logBlockNumber: BigInt(request.blockNumber),
    logTxHash: request.txHash,
    meta: oracleRequestMeta(oracleRequestOf(request)),
  }
}

function oracleRequestOf(request: OracleRequestEvent): OracleRequest {
  return {
    requestId: request.requestId,
    specId: request.specId,
    requester: request.requester,
    callbackAddress: request.callbackAddr,
    callbackFunctionId: request.callbackFunctionId,
    payment: request.payment,
    cancelExpiration: request.cancelExpiration,
    dataVersion: request.dataVersion,
    data: request.data,
    log: { topics: request.topics, data: request.logData },
  }
}

/**
 * A request read from the chain as `jobs run --tx` runs it: the same variables the runner gives,
 * its chain's id in `jobSpec.evmChainID` as the runner gives it.
 */
export function recordedRequest(request: OracleRequestEvent): RecordedRequest {
  return {
    request: oracleRequestOf(request),
    jobRun: jobRunVars(request),
    chainId: request.chainId,
  }
}
