import type { Fees, Head } from './model.ts'
import type { TxAttempt } from './tx-store.ts'

/**
 * Fee policy, as pure functions: what a transaction offers when first signed, when a replacement is
 * due, and what replaces it (Chainlink's transaction manager keeps the same rules in its fee
 * estimator and its bumping).
 */

/** The market on an EIP-1559 chain: twice the base fee (room for six full blocks) plus the tip. */
export function dynamicFees(baseFee: bigint, priorityFee: bigint): Fees {
  return { maxFeePerGas: baseFee * 2n + priorityFee, maxPriorityFeePerGas: priorityFee }
}

/** The market on a chain without a base fee: the node's gas price for both. */
export function legacyFees(gasPrice: bigint): Fees {
  return { maxFeePerGas: gasPrice, maxPriorityFeePerGas: gasPrice }
}

/** The transaction's latest attempt offers less than the current base fee: no block can include it. */
export function pricedOut(last: TxAttempt | undefined, current: Head): boolean {
  return (
    last !== undefined && current.baseFee !== null && BigInt(last.maxFeePerGas) < current.baseFee
  )
}

/**
 * Waiting behind earlier nonces is not being stuck. Only the key's lowest unmined nonce can hold
 * the others back, so a stalled key bumps that one; bumping every pending transaction made each
 * replacement a new pool event and, on anvil, another empty block, round after round up to the
 * fee cap. A transaction whose fee cap is under the current base fee cannot be mined whatever
 * comes before it, so it is bumped too (a fee spike prices out the whole queue at once).
 */
export function bumpIsDue(input: {
  nonce: number
  lowestUnmined: number
  last: TxAttempt | undefined
  current: Head
  sentAtBlock: number
  progressBlock: number
  bumpAfterBlocks: number
}): boolean {
  const { current, bumpAfterBlocks } = input
  if (current.number - input.sentAtBlock < bumpAfterBlocks) return false
  const stalled = current.number - input.progressBlock >= bumpAfterBlocks
  const blocking = stalled && input.nonce === input.lowestUnmined
  return blocking || pricedOut(input.last, current)
}

/**
 * Fees for a transaction that replaces `last` in the node's pool (20 % more, as a Chainlink node bumps;
 * geth asks at least 10 % of a replacement) and still meets the market; the market alone when nothing
 * is to be replaced.
 */
export function feesAbove(last: TxAttempt | undefined, market: Fees): Fees {
  if (!last) return market
  const raise = (value: bigint) => (value * 12n + 9n) / 10n
  const maxPriorityFeePerGas = maxOf(
    raise(BigInt(last.maxPriorityFeePerGas)),
    market.maxPriorityFeePerGas,
  )
  return {
    maxPriorityFeePerGas,
    maxFeePerGas: maxOf(
      raise(BigInt(last.maxFeePerGas)),
      market.maxFeePerGas,
      maxPriorityFeePerGas,
    ),
  }
}

function maxOf(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b))
}
