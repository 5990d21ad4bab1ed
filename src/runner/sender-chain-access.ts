import type { JsonRpcProvider } from 'ethers'
import type { TxSender } from '../chain/sender.ts'
import type { CallRequest, ChainAccess, TransactionOutcome, TransactionRequest } from '../pipeline/index.ts'

/** A fulfilment that reverted on chain: the run errors with the decoded reason. */
export class FulfilmentRevertedError extends Error {
  override readonly name = 'FulfilmentRevertedError'
}

export interface SenderAccessOptions {
  /** Simulate every transaction of the run, whatever its ethtx says (a run retried or taken over). */
  simulate?: boolean
}

/**
 * The pipeline's ethtx/ethcall, backed by the runner's transaction sender. `onSubmit` lets the run
 * record say `sent` while the transaction is on its way.
 */
export function senderChainAccess(
  sender: TxSender,
  provider: JsonRpcProvider,
  onSubmit?: (tx: TransactionRequest) => Promise<void>,
  options: SenderAccessOptions = {},
): ChainAccess {
  return {
    async sendTransaction(tx: TransactionRequest): Promise<TransactionOutcome> {
      await onSubmit?.(tx)
      const result = await sender.submit({
        to: tx.to,
        data: tx.data,
        gasLimit: tx.gasLimit === undefined ? undefined : Number(tx.gasLimit),
        idempotencyKey: tx.idempotencyKey,
        simulate: tx.simulate === true || options.simulate === true,
      })
      if (result.status === 'reverted') {
        throw new FulfilmentRevertedError(`transaction ${result.txHash ?? '(not sent)'} reverted: ${result.reason ?? 'no reason given'}`)
      }
      return { txHash: result.txHash, status: result.status === 'mined' ? 'confirmed' : 'already-done' }
    },
    async call(request: CallRequest): Promise<string> {
      return provider.call({
        to: request.to,
        data: request.data,
        from: request.from,
        gasLimit: request.gasLimit,
        blockTag: request.blockNumber === undefined || request.blockNumber === 'latest' ? 'latest' : request.blockNumber,
      })
    },
  }
}
