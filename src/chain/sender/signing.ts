import type { Fees, UnsignedTx } from './model.ts'
import type { SenderNode } from './node-client.ts'
import type { TxAttempt } from './tx-store.ts'
import type { TxSigner } from './tx-signer.ts'

/** Signs one transaction of a key for `nonce` at `fees`; a filler's attempt is marked as one. */
export type SignAttempt = (
  tx: UnsignedTx,
  nonce: number,
  fees: Fees,
  filler?: boolean,
) => Promise<TxAttempt>

/**
 * A key's signing, in the shape the chain asks for: type 2 (EIP-1559) where blocks carry a base
 * fee, type 0 with a gas price where they do not.
 */
export function attemptSigner(
  signer: TxSigner,
  node: Pick<SenderNode, 'chainId' | 'head'>,
): SignAttempt {
  return async (tx, nonce, fees, filler = false) => {
    const chainId = node.chainId
    if (chainId === undefined)
      throw new Error('the chain id is not known yet: start the sender first')
    const common = {
      chainId,
      nonce,
      to: tx.to,
      data: tx.data,
      value: tx.value,
      gasLimit: tx.gasLimit,
    }
    const { raw, hash } = signer.sign(
      node.head?.baseFee === null
        ? { ...common, type: 0, gasPrice: fees.maxFeePerGas }
        : { ...common, type: 2, ...fees },
    )
    return {
      hash,
      raw,
      maxFeePerGas: fees.maxFeePerGas.toString(),
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
      ...(filler ? { filler } : {}),
    }
  }
}
