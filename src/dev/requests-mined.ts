/** Reading a burst's requests off the chain once it is mined (the bench's load generator). */
import type { Provider } from 'ethers'
import { operatorInterface, ORACLE_REQUEST_TOPIC } from '../chain/operator.ts'
import type { SentRequest } from './requests.ts'

/**
 * The requests made by the given transactions, from the Operator's `OracleRequest` logs (one
 * `eth_getLogs` per poll over the new blocks) rather than a receipt per transaction; in the order of
 * `hashes`. Waits until every transaction has made its request (anvil may count a sender's nonce
 * before its block is the head), and throws after `timeoutMs` naming one that did not (it reverted or
 * was not mined). What anvil lost from its pool is sent again before this (`waitForSigned`).
 */
export async function requestsOfTransactions(
  provider: Provider,
  operator: string,
  hashes: readonly string[],
  sentAt: readonly number[],
  options: { fromBlock: number; timeoutMs?: number },
): Promise<SentRequest[]> {
  const byTx = new Map<string, SentRequest>()
  const wanted = new Set(hashes.map((hash) => hash.toLowerCase()))
  const deadline = Date.now() + (options.timeoutMs ?? 10_000)
  let fromBlock = options.fromBlock
  while (byTx.size < wanted.size) {
    const toBlock = await provider.getBlockNumber()
    if (toBlock >= fromBlock) {
      for (const log of await provider.getLogs({
        address: operator,
        topics: [ORACLE_REQUEST_TOPIC],
        fromBlock,
        toBlock,
      })) {
        const txHash = log.transactionHash.toLowerCase()
        if (!wanted.has(txHash)) continue
        const parsed = operatorInterface.decodeEventLog('OracleRequest', log.data, log.topics)
        byTx.set(txHash, {
          requestId: String(parsed.requestId).toLowerCase(),
          txHash: log.transactionHash,
          blockNumber: log.blockNumber,
          sentAt: 0,
        })
      }
      fromBlock = toBlock + 1
    }
    if (byTx.size === wanted.size) break
    if (Date.now() > deadline) {
      const missing = hashes.find((hash) => !byTx.has(hash.toLowerCase())) as string
      throw new Error(
        `${wanted.size - byTx.size} of ${wanted.size} request transactions made no OracleRequest by block ${fromBlock - 1} (e.g. ${missing}: ${await whereIs(provider, missing)})`,
      )
    }
    await new Promise((resolveDelay) => setTimeout(resolveDelay, 20))
  }
  return hashes.map((hash, index) => ({
    ...(byTx.get(hash.toLowerCase()) as SentRequest),
    sentAt: sentAt[index] ?? Date.now(),
  }))
}

/** Where a transaction is, in words for an error: mined (and how), waiting in the node's pool, or unknown to it. */
async function whereIs(provider: Provider, hash: string): Promise<string> {
  try {
    const [receipt, transaction, head] = await Promise.all([
      provider.getTransactionReceipt(hash),
      provider.getTransaction(hash),
      provider.getBlockNumber(),
    ])
    if (receipt)
      return `mined in block ${receipt.blockNumber} with status ${receipt.status}, ${receipt.logs.length} logs; head ${head}`
    if (transaction)
      return `not mined, known to the node (nonce ${transaction.nonce} from ${transaction.from}); head ${head}`
    return `unknown to the node; head ${head}`
  } catch (error) {
    return `could not be looked up: ${error instanceof Error ? error.message : String(error)}`
  }
}
