import { FeedrunnerError } from '../config/errors.ts'
import type { JsonRpcProvider } from 'ethers'
import type { TxSender } from '../chain/sender/index.ts'
import type {
  CallRequest,
  ChainAccess,
  GasEstimateRequest,
  TransactionOutcome,
  TransactionRequest,
} from '../pipeline/index.ts'

/** A fulfilment that reverted on chain: the run errors with the decoded reason. */
export class FulfilmentRevertedError extends FeedrunnerError {
  override readonly name = 'FulfilmentRevertedError'
  constructor(message: string) {
    super(message, { kind: 'reverted' })
  }
}

export interface SenderAccessOptions {
  /**
   * The run was delivered before (retried, or taken over from a process that died): simulate every
   * transaction whatever its ethtx says, and let a transaction job that failed for good run again.
   */
  retried?: boolean
}

/**
 * The pipeline's ethtx/ethcall, backed by the runner's transaction sender. `onSubmit` lets the run
 * record say `sent` while the transaction is on its way; it runs beside the submission, not before it,
 * so it adds no round trip to a request's latency.
 */
export function senderChainAccess(
  sender: TxSender,
  provider: JsonRpcProvider,
  onSubmit?: (tx: TransactionRequest) => Promise<void>,
  options: SenderAccessOptions = {},
): ChainAccess {
  return {
    async sendTransaction(tx: TransactionRequest): Promise<TransactionOutcome> {
      const [, result] = await Promise.all([
        onSubmit?.(tx),
        sender.submit({
          to: tx.to,
          data: tx.data,
          gasLimit: tx.gasLimit === undefined ? undefined : Number(tx.gasLimit),
          idempotencyKey: tx.idempotencyKey,
          simulate: tx.simulate === true || options.retried === true,
          resubmit: options.retried === true,
        }),
      ])
      if (result.status === 'reverted') {
        throw new FulfilmentRevertedError(
          `transaction ${result.txHash ?? '(not sent)'} reverted: ${result.reason ?? 'no reason given'}`,
        )
      }
      // The ethtx task's minConfirmations: the task goes on once its transaction is that deep (the
      // sender itself waits TX_CONFIRMATIONS); bounded by the task's timeout, as on a node.
      const depth = tx.minConfirmations ?? 0
      if (result.status === 'mined' && result.blockNumber !== undefined && depth > 1)
        await untilDepth(provider, result.blockNumber, depth, tx.signal)
      return {
        txHash: result.txHash,
        status: result.status === 'mined' ? 'confirmed' : 'already-done',
      }
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
