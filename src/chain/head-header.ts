import { z } from 'zod'

/** A block header as a `newHeads` notification carries it. */
export interface HeadHeader {
  number: number
  hash: string
  parentHash: string
  /** The block's 2048-bit logs bloom (0x + 512 hex, src/chain/logs-bloom.ts), when the node sent one. */
  logsBloom?: string
  /**
   * True when the header shows the block holds no transaction, so no log either (consensus, no
   * trust in the node's bloom needed); false when it shows one, or shows nothing.
   */
  noTransactions?: boolean
}

/** The root of the empty trie: a header's transactionsRoot when its block holds no transaction. */
export const EMPTY_TRIE_ROOT = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421'

const hash32 = z.string().regex(/^0x[0-9a-f]{64}$/i)
const headHeader = z.object({
  number: z.string().regex(/^0x[0-9a-f]+$/i),
  hash: hash32,
  parentHash: hash32,
  // Not required: a head read must not fail on a node that leaves them out or shapes them otherwise.
  logsBloom: z
    .string()
    .regex(/^0x[0-9a-f]{512}$/i)
    .optional()
    .catch(undefined),
  transactionsRoot: hash32.optional().catch(undefined),
  transactions: z.array(z.unknown()).optional().catch(undefined),
})

/** A block header as a node sends it (a `newHeads` notification, a raw `eth_getBlockByNumber`), or undefined. */
export function headHeaderOf(value: unknown): HeadHeader | undefined {
  const header = headHeader.safeParse(value)
  if (!header.success) return undefined
  const { transactionsRoot, transactions, logsBloom } = header.data
  // eth_getBlockByNumber lists the transaction hashes; a newHeads notification need not (geth's
  // carries none), but every header has the root. Empty only when every field given says so.
  const rootSays =
    transactionsRoot === undefined ? undefined : transactionsRoot.toLowerCase() === EMPTY_TRIE_ROOT
  const listSays = transactions === undefined ? undefined : transactions.length === 0
  return {
    number: Number(header.data.number),
    hash: header.data.hash,
    parentHash: header.data.parentHash,
    ...(logsBloom === undefined ? {} : { logsBloom }),
    noTransactions: rootSays !== false && listSays !== false && (rootSays ?? listSays) === true,
  }
}
