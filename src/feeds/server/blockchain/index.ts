import { FeedServiceError } from '../errors.ts'
import { readAccountBalance } from './balance.ts'
import { checkAddress, checkTxHash } from './format.ts'
import {
  RECORDED_BLOCKCHAIN,
  recordedAccountBalance,
  recordedTokenTransfers,
  recordedTransaction,
} from './recorded.ts'
import { ChainRpc, DEFAULT_RPC_TIMEOUT_MS } from './rpc.ts'
import { readTransaction } from './transaction.ts'
import { readTokenTransfers } from './transfers.ts'

// The blockchain family of the local Data Feed Query Service: each method returns the `data`
// object of FEEDS.md, answered live from the JSON-RPC node configured for the blockchain id, or
// from recorded mainnet data for `ethereum-mainnet` when no node is configured for it.

export type { DemoTokens } from './demo-tokens.ts'
export { RECORDED_BLOCKCHAIN, recordedHashes } from './recorded.ts'

/**
 * deployDemoTokens of ./demo-tokens.ts, loaded on first use: it compiles Solidity, and loading
 * solc costs seconds that `feeds serve` must not pay at start.
 */
export async function deployDemoTokens(
  ...args: Parameters<typeof import('./demo-tokens.ts').deployDemoTokens>
): Promise<import('./demo-tokens.ts').DemoTokens> {
  const { deployDemoTokens: deploy } = await import('./demo-tokens.ts')
  return deploy(...args)
}

export interface BlockchainSource {
  accountBalance(params: { blockchain: string; address: string }): Promise<Record<string, unknown>>
  tokenTransfers(params: { blockchain: string; hash: string }): Promise<Record<string, unknown>>
  transaction(params: { blockchain: string; hash: string }): Promise<Record<string, unknown>>
  /** Closes every node connection; later calls answer 503. */
  close(): Promise<void>
}

export interface BlockchainSourceOptions {
  /** Blockchain id (e.g. `local`) -> JSON-RPC URL (http(s) or ws(s)). Ids are matched case-insensitively. */
  chains: Record<string, string>
  /** Upper bound of one answer's node round trips; past it the answer is a 503. */
  rpcTimeoutMs?: number
}

export function createBlockchainSource(options: BlockchainSourceOptions): BlockchainSource {
  const timeoutMs = options.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS
  const nodes = new Map<string, ChainRpc>()
  for (const [id, url] of Object.entries(options.chains)) {
    const blockchain = id.toLowerCase()
    if (!/^(https?|wss?):\/\//i.test(url))
      throw new Error(
        `chain '${id}': the JSON-RPC URL must start with http://, https://, ws:// or wss://`,
      )
    nodes.set(blockchain, new ChainRpc(blockchain, url, timeoutMs))
  }

  /** The live node of a blockchain id; undefined for the recording; 404 for an id we do not serve. */
  function nodeFor(blockchain: string): ChainRpc | undefined {
    const id = blockchain.toLowerCase()
    const node = nodes.get(id)
    if (node !== undefined || id === RECORDED_BLOCKCHAIN) return node
    const served = [
      ...nodes.keys(),
      ...(nodes.has(RECORDED_BLOCKCHAIN) ? [] : [`${RECORDED_BLOCKCHAIN} (recorded data)`]),
    ]
    throw new FeedServiceError(
      404,
      `unknown blockchain '${blockchain}': this service serves ${served.join(', ')}`,
    )
  }

  return {
    async accountBalance({ blockchain, address }) {
      const node = nodeFor(blockchain)
      const checked = checkAddress(address)
      if (node === undefined) return recordedAccountBalance(checked)
      return {
        ...(await node.use(`the balance of ${checked}`, (provider) =>
          readAccountBalance(provider, node.blockchain, checked),
        )),
      }
    },
    async tokenTransfers({ blockchain, hash }) {
      const node = nodeFor(blockchain)
      const checked = checkTxHash(hash)
      if (node === undefined) return recordedTokenTransfers(checked)
      return node.use(`the token transfers of ${checked}`, (provider) =>
        readTokenTransfers(provider, node.blockchain, checked),
      )
    },
    async transaction({ blockchain, hash }) {
      const node = nodeFor(blockchain)
      const checked = checkTxHash(hash)
      if (node === undefined) return recordedTransaction(checked)
      return node.use(`transaction ${checked}`, (provider) =>
        readTransaction(provider, node.blockchain, checked),
      )
    },
    async close() {
      await Promise.all([...nodes.values()].map((node) => node.close()))
    },
  }
}
