import { FeedrunnerError } from '../config/errors.ts'
import type { JsonRpcProvider } from 'ethers'
import type { TxSender } from '../chain/sender/index.ts'
import { closureOf, expiredUnsent, fateOf, type RequestFate } from '../chain/request-fate.ts'
import { expiredRefusal } from './admission.ts'
import type {
  CallRequest,
  ChainAccess,
  GasEstimateRequest,
  TransactionOutcome,
  TransactionRequest,
} from '../pipeline/index.ts'

/** A fulfilment that reverted on chain (or would have: its simulation did): the run errors with the reason. */
export class FulfilmentRevertedError extends FeedrunnerError {
  override readonly name = 'FulfilmentRevertedError'
  constructor(message: string) {
    super(message, { kind: 'reverted' })
  }
}

/**
 * The requester cancelled the request (`CancelOracleRequest`) before its fulfilment was signed: nothing
 * was sent, and the run ends `cancelled`, as the chain says.
 */
export class RequestCancelledError extends FeedrunnerError {
  override readonly name = 'RequestCancelledError'
  constructor(readonly txHash: string) {
    super(`the requester cancelled the request in ${txHash}: nothing was sent`, {
      kind: 'bad_input',
      retryable: false,
    })
  }
}

/**
 * The Operator holds no commitment for the request ("Must have a valid requestId") and its logs show
 * no answer and no cancel for it: the request is not on chain as the run saw it. A reorg took it
 * away (it may come back, in the same block's place or another); the run is tried again, and one
 * whose request stays away errors with this cause. It is not recorded fulfilled: nothing answered it.
 */
export class RequestNotOnChainError extends FeedrunnerError {
  override readonly name = 'RequestNotOnChainError'
  constructor(requestId: string, operator: string, fromBlock: number) {
    super(
      `the Operator ${operator} knows no open request ${requestId}, and its logs from block ${fromBlock} show no answer and no cancel for it: the request is not on chain as the run saw it (a reorg took it away?); the run is tried again`,
      { kind: 'upstream', retryable: true },
    )
  }
}

/** The request a run's transactions are for: where to look when the Operator says it is closed. */
export interface RequestOnChain {
  operator: string
  requestId: string
  blockNumber: number
  /** Unix seconds after which its requester may cancel it: no new fulfilment is signed then. */
  cancelExpiration?: bigint
}

export interface SenderAccessOptions {
  /** `onSubmit` lets the run record say `sent` while the transaction is on its way (beside it). */
  onSubmit?: (tx: TransactionRequest) => Promise<void>
  /** The widest eth_getLogs range (CHAIN_LOG_RANGE_BLOCKS). */
  logRangeBlocks?: number
}

/**
 * The pipeline's ethtx/ethcall, backed by the runner's transaction sender, which simulates every
 * transaction just before it signs it. When the Operator refuses the fulfilment because it knows
 * the request no more ("Must have a valid requestId"), its logs say why: answered already (by this
 * node's earlier run or another node: the run is fulfilled, with that transaction) or cancelled by
 * its requester (the run ends cancelled), so a run record never says fulfilled for a cancel; with
 * neither, the request is not on chain as the run saw it, and the run is tried again.
 */
export function senderChainAccess(
  sender: TxSender,
  provider: JsonRpcProvider,
  request: RequestOnChain | undefined,
  options: SenderAccessOptions = {},
): ChainAccess {
  return {
    async sendTransaction(tx: TransactionRequest): Promise<TransactionOutcome> {
      // A run no request started (a cron tick, a webhook call): the same sender, with no Operator to ask.
      if (!request) return sendUnrequested(sender, provider, tx, options)
      const closure = () =>
        closureOf(provider, {
          operator: request.operator,
          requestId: request.requestId,
          fromBlock: request.blockNumber,
          rangeBlocks: options.logRangeBlocks,
        })
      const unsent = await expiredUnsent(request.cancelExpiration, {
        chainTime: () => sender.chainTime(),
        transactionOut: () => sender.bound(tx.idempotencyKey),
      })
      // Past its cancelExpiration with nothing sent: what the chain says of it decides the end.
      if (unsent) return endedAs(fateOf(await closure(), true), request)
      const result = await submitted(sender, tx, options)
      if (result.status === 'reverted')
        throw new FulfilmentRevertedError(
          `transaction ${result.txHash ?? '(not sent)'} reverted: ${result.reason ?? 'no reason given'}`,
        )
      if (result.status === 'mined') {
        // The ethtx task's minConfirmations: the task goes on once its transaction is that deep
        // (the sender itself waits TX_CONFIRMATIONS); bounded by the task's timeout, as on a node.
        const depth = tx.minConfirmations ?? 0
        if (result.blockNumber !== undefined && depth > 1)
          await untilDepth(provider, result.blockNumber, depth, tx.signal)
        return { txHash: result.txHash, status: 'confirmed' }
      }
      // The Operator knows the request no more: its logs say why.
      return endedAs(fateOf(await closure(), false), request)
    },
    async call(request: CallRequest): Promise<string> {
      return provider.call({
        to: request.to,
        data: request.data,
        from: request.from,
        gasLimit: request.gasLimit,
        gasPrice: request.gasPrice,
        maxPriorityFeePerGas: request.maxPriorityFeePerGas,
        maxFeePerGas: request.maxFeePerGas,
        blockTag: request.blockNumber ?? 'latest',
      })
    },
    async estimateGas(request: GasEstimateRequest): Promise<bigint> {
      return provider.estimateGas({
        from: request.from,
        to: request.to,
        data: request.data,
        blockTag: request.blockNumber ?? 'latest',
      })
    },
  }
}

/** The task's transaction handed to the key's sender (and told to `onSubmit` beside it). */
async function submitted(
  sender: TxSender,
  tx: TransactionRequest,
  options: SenderAccessOptions,
): ReturnType<TxSender['submit']> {
  const [, result] = await Promise.all([
    options.onSubmit?.(tx),
    sender.submit({
      to: tx.to,
      data: tx.data,
      gasLimit: tx.gasLimit === undefined ? undefined : Number(tx.gasLimit),
      idempotencyKey: tx.idempotencyKey,
      signal: tx.signal,
    }),
  ])
  return result
}

/**
 * A transaction of a run no request started: simulated, signed, resent, confirmed and reorg-watched
 * by the key's sender as a fulfilment is; a revert (simulated or mined) fails the task.
 */
async function sendUnrequested(
  sender: TxSender,
  provider: JsonRpcProvider,
  tx: TransactionRequest,
  options: SenderAccessOptions,
): Promise<TransactionOutcome> {
  const result = await submitted(sender, tx, options)
  if (result.status !== 'mined')
    throw new FulfilmentRevertedError(
      `transaction ${result.txHash ?? '(not sent)'} to ${tx.to} reverted: ${result.reason ?? 'no reason given'}`,
    )
  const depth = tx.minConfirmations ?? 0
  if (result.blockNumber !== undefined && depth > 1)
    await untilDepth(provider, result.blockNumber, depth, tx.signal)
  return { txHash: result.txHash, status: 'confirmed' }
}

/**
 * A run whose request the chain closed, or that may get no new fulfilment: answered (by this node's
 * earlier run or another node: the task's transaction is that answer), cancelled by its requester,
 * past its cancelExpiration; an open one here is a request not on chain as the run saw it.
 */
function endedAs(fate: RequestFate, request: RequestOnChain): TransactionOutcome {
  switch (fate.state) {
    case 'fulfilled':
      return { txHash: fate.txHash, status: 'already-done' }
    case 'cancelled':
      throw new RequestCancelledError(fate.txHash)
    case 'expired':
      throw expiredRefusal(request.cancelExpiration as bigint)
    case 'open':
      throw new RequestNotOnChainError(request.requestId, request.operator, request.blockNumber)
  }
}

const DEPTH_POLL_MS = 250

/**
 * Until the block `minedIn` is `depth` deep (the head read raw: ethers caches block numbers), or
 * `signal` aborts (the task's timeout): a chain without new blocks must not hold a loop forever.
 */
async function untilDepth(
  provider: JsonRpcProvider,
  minedIn: number,
  depth: number,
  signal?: AbortSignal,
): Promise<void> {
  while (!signal?.aborted) {
    const head = Number(await provider.send('eth_blockNumber', []))
    if (head - minedIn + 1 >= depth) return
    await new Promise((resolve) => setTimeout(resolve, DEPTH_POLL_MS))
  }
}
