/**
 * What a node's answer to `eth_sendRawTransaction` says about the signed bytes it refused.
 *
 * - tolerated: nothing to do. The node has the transaction (or one with its nonce), or its fee is
 *   below the market, which the sender's tracker resolves by bumping after `bumpAfterBlocks`.
 * - fatal: these bytes will never be taken, however often they are sent, whatever the chain does
 *   next (what Chainlink's transaction manager calls a fatal send error). Their nonce must be spent on
 *   something else, or every later transaction of the key waits behind it.
 * - anything else (no funds, a full pool, a node that is away): the same bytes may be taken later.
 *
 * The words are the clients' own: geth and erigon, besu, nethermind, and anvil (revm), which answers
 * a gas limit above the block's with "intrinsic gas too high -- tx.gas_limit > env.block.gas_limit".
 */
const TOLERATED =
  /already known|known transaction|already imported|nonce too low|nonce has already been used|underpriced|fee per gas less than block base fee|fee cap .*too low|max fee per gas less than/i

const FATAL = new RegExp(
  [
    'exceeds block gas limit',
    'gas_limit > env\\.block\\.gas_limit',
    'GasLimitExceeded',
    'intrinsic gas too low',
    'intrinsic gas exceeds gas limit',
    'invalid sender',
    'invalid signature',
    'invalid chain id',
    'negative value',
    'oversized data',
    'gas uint64 overflow',
    // geth's RPCTxFeeCap: the fee is part of the signed bytes, so they stay over the cap.
    'exceeds the configured cap',
    'transaction fee cap exceeded',
  ].join('|'),
  'i',
)

/** What a refusal means for the sender (see above); `transient`: the same bytes may be taken later. */
export type NodeRefusal = 'tolerated' | 'fatal' | 'transient'

/**
 * The node's words read once, where its answer arrives (JsonRpcCallError); every decision after that
 * reads the error's `refusal`, never the text again.
 */
export function classifyRefusal(nodeMessage: string): NodeRefusal {
  if (TOLERATED.test(nodeMessage)) return 'tolerated'
  if (FATAL.test(nodeMessage)) return 'fatal'
  return 'transient'
}

export function isToleratedRefusal(message: string): boolean {
  return classifyRefusal(message) === 'tolerated'
}

export function isFatalRefusal(message: string): boolean {
  return classifyRefusal(message) === 'fatal'
}

/** How the node refused a call, or `transient` for a failure that is not a node's answer (no answer). */
export function refusalOf(error: unknown): NodeRefusal {
  const refusal = (error as { refusal?: unknown } | null)?.refusal
  return refusal === 'tolerated' || refusal === 'fatal' ? refusal : 'transient'
}
