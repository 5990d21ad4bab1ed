import { FeedrunnerError } from '../config/errors.ts'
import {
  RecordingChainAccess,
  type CallRequest,
  type GasEstimateRequest,
  type TransactionRequest,
} from './chain-access.ts'
import { runJob, type RunOptions, type RunResult } from './executor.ts'
import { unforwarded } from './forwarding.ts'
import {
  answerLabel,
  answerShapeOf,
  consumerValueType,
  decodeAnswer,
  type ConsumerValueType,
} from './answer-shape.ts'
import {
  buildOracleRequest,
  decodeAnyFulfilment,
  oracleRequestMeta,
  type OracleRequest,
  type RequestParamValue,
} from './request.ts'
import type { Job } from './job-spec/loader.ts'

/**
 * A job run off chain, as if its request came from chain: the parameters CBOR-encoded as a consumer's
 * `req._add` calls would, inside an OracleRequest log with a fake requestId; bridges and HTTP are real;
 * the transaction is recorded, not sent.
 */
export interface DryRunOptions extends Pick<
  RunOptions,
  'env' | 'aliases' | 'onTask' | 'signal' | 'limits' | 'blockRoots' | 'forwarder' | 'isolation'
> {
  params: ReadonlyArray<readonly [string, RequestParamValue]>
  requester?: string
  /** The callback the requester names; default: FeedConsumer's for the spec's value type. */
  callbackFunction?: string
  requestId?: string
  /** A request recorded on chain to run instead of a built one (`jobs run --tx`). */
  recorded?: RecordedRequest
  /** Answers the pipeline's eth calls (ethcall tasks); without it they fail, as nothing is on chain. */
  call?: (tx: CallRequest) => Promise<string>
  /** Answers estimategaslimit tasks (eth_estimateGas); without it they fail likewise. */
  estimateGas?: (request: GasEstimateRequest) => Promise<bigint>
}

/** An OracleRequest read from the chain, with the `jobRun` variables its log gives a run. */
export interface RecordedRequest {
  request: OracleRequest
  jobRun: Record<string, unknown>
  /** The chain it was read from: `jobSpec.evmChainID` of a spec that names none, as a runner gives it. */
  chainId?: number
}

export interface DryRun {
  request: OracleRequest
  result: RunResult
  /** The transaction the run would send (the last ethtx), if it got that far. */
  transaction?: TransactionRequest
  /** The call a forwarded transaction makes: `forward(to, data)`'s to and data (forwardingAllowed). */
  forwarded?: { to: string; data: string }
  /** The answer's type label (`uint256`, `(uint256, uint256)`) when the spec's fulfilment shows it. */
  valueType?: string
  /** The answer inside the fulfilment calldata: one value, or a list for several. */
  value?: unknown
}

/**
 * `jobRun` of a request built for a dry run: its log and its oracleRequest, as a run on chain has
 * them; the block and transaction it would be in are errors that say so, read only by a task that
 * uses them.
 */
function builtJobRun(job: Job, request: OracleRequest): Record<string, unknown> {
  const onChainOnly = new FeedrunnerError(
    'a request built for a dry run is in no block or transaction (run it on a recorded request with --tx or --log)',
    { kind: 'bad_input' },
  )
  return {
    logData: request.log.data,
    logTopics: request.log.topics,
    logAddress: job.spec.type === 'directrequest' ? job.spec.contractAddress : undefined,
    logBlockHash: onChainOnly,
    logBlockNumber: onChainOnly,
    logTxHash: onChainOnly,
    meta: oracleRequestMeta(request),
  }
}

/**
 * `jobSpec.evmChainID` of a dry run: the spec's, else the chain its recorded request was read from
 * (a runner gives a spec without one its only chain). A request built for a dry run has no chain: the
 * variable is then an error that says so, read only by a task that uses it.
 */
function dryRunChainId(job: Job, recorded: RecordedRequest | undefined): string | Error {
  if (job.spec.evmChainID !== undefined) return job.spec.evmChainID.toString()
  if (recorded?.chainId !== undefined) return String(recorded.chainId)
  return new FeedrunnerError(
    'the spec names no evmChainID: a runner gives the id of the one chain it serves, and a request built for a dry run has none (write evmChainID, or run on a recorded request with --tx or --log)',
    { kind: 'bad_input' },
  )
}

/** FeedConsumer's callbacks (contracts/FeedConsumer.sol), one per value type. */
export const FEED_CONSUMER_CALLBACKS: Readonly<Record<ConsumerValueType, string>> = {
  uint256: 'fulfillUint256(bytes32,uint256)',
  int256: 'fulfillInt256(bytes32,int256)',
  bool: 'fulfillBool(bytes32,bool)',
  string: 'fulfillString(bytes32,string)',
  bytes32: 'fulfillBytes32(bytes32,bytes32)',
  bytes: 'fulfillBytes(bytes32,bytes)',
  raw: 'fulfillRaw(bytes32,bytes)',
}

/** The answer's type label (`uint256`, `(uint256, uint256)`), when the spec's fulfilment shows it. */
export function fulfilmentValueType(job: Job): string | undefined {
  const answer = answerShapeOf(job)
  return answer.ok ? answerLabel(answer.shape) : undefined
}

export async function dryRunJob(job: Job, options: DryRunOptions): Promise<DryRun> {
  const answer = answerShapeOf(job)
  const shape = answer.ok ? answer.shape : undefined
  const valueType = shape && answerLabel(shape)
  const request =
    options.recorded?.request ??
    buildOracleRequest({
      externalJobID: job.spec.externalJobID,
      params: options.params,
      requester: options.requester,
      callbackFunction:
        options.callbackFunction ??
        (shape === undefined ? undefined : FEED_CONSUMER_CALLBACKS[consumerValueType(shape)]),
      requestId: options.requestId,
    })
  const chain = new RecordingChainAccess(options.call, options.estimateGas)
  const result = await runJob(job, {
    ...options,
    chain,
    runId: `dry-run:${request.requestId}`,
    jobSpec: { evmChainID: dryRunChainId(job, options.recorded) },
    jobRun: options.recorded?.jobRun ?? builtJobRun(job, request),
  })
  const transaction = chain.transactions.at(-1)
  const forwarded = transaction && unforwarded(transaction.data)
  const dryRun: DryRun = { request, result, transaction, valueType, forwarded }
  if (transaction && shape) {
    try {
      const fulfilment = decodeAnyFulfilment((forwarded ?? transaction).data)
      dryRun.value = decodeAnswer(shape, fulfilment.data)
    } catch {
      // Not a fulfilment: the calldata is printed as it is.
    }
  }
  return dryRun
}
