import {
  JsonRpcCallError,
  postJsonRpcBatch,
  type RpcCall,
  type RpcOutcome,
} from './json-rpc-batch.ts'

/** Where a batch goes: a node's URL, or a function that sends it (an endpoint pool's broadcast). */
export type BatchTarget = string | ((calls: readonly RpcCall[]) => Promise<RpcOutcome[]>)

/**
 * Sends one key's signed transactions to the node in nonce order without waiting for each answer.
 *
 * Sent one request at a time, a key's throughput is one transaction per round trip, and an
 * automining anvil answers `eth_sendRawTransaction` only once it has mined the block. Sent as
 * concurrent requests, a later nonce can reach the node first and wait in the pool as a gap, and
 * anvil's automine then leaves it there (foundry-rs/foundry#10122) with every later nonce behind it.
 * So everything signed while a request is out leaves together, as one JSON-RPC batch in signing order
 * (nonce order), when that request is answered: at most one request per key is out at a time.
 */
export interface OrderedBroadcaster {
  /** Resolves when the node has taken the transaction (or already had it); rejects with its error. */
  send(raw: string): Promise<void>
  /**
   * Rejects every transaction not posted yet with `error`: the key is another process's now, and
   * bytes posted after it took the key could land at nonces it reads as free. What is on its way is
   * not called back; the new owner waits a lease for it (key-recovery.ts).
   */
  drop(error: Error): void
}

interface Waiting {
  raw: string
  resolve: () => void
  reject: (error: Error) => void
}

/** Error text of a JSON-RPC answer that means "nothing to do": the node has it, or the nonce is spent. */
export type ToleratedError = (message: string) => boolean

export interface OrderedBroadcasterOptions {
  /** How long the node may take to answer one batch. */
  timeoutMs?: number
  /** The least time between two batches leaving: what is signed meanwhile joins the next one. */
  minIntervalMs?: number
}

export function createOrderedBroadcaster(
  target: BatchTarget,
  tolerated: ToleratedError,
  options: OrderedBroadcasterOptions = {},
): OrderedBroadcaster {
  const timeoutMs = options.timeoutMs ?? 30_000
  const minIntervalMs = options.minIntervalMs ?? 0
  const waiting: Waiting[] = []
  let sending = false
  let lastBatchAt = Number.NEGATIVE_INFINITY

  async function post(batch: readonly Waiting[]): Promise<void> {
    const calls = batch.map((item) => ['eth_sendRawTransaction', [item.raw]] as const)
    const outcomes =
      typeof target === 'string'
        ? await postJsonRpcBatch(target, calls, timeoutMs)
        : await target(calls)
    batch.forEach((item, index) => {
      const outcome = outcomes[index]
      if (outcome && !outcome.ok && !tolerated(outcome.message))
        item.reject(new JsonRpcCallError('eth_sendRawTransaction', outcome.message))
      else item.resolve()
    })
  }

  async function drain(): Promise<void> {
    sending = true
    try {
      while (waiting.length > 0) {
        const wait = lastBatchAt + minIntervalMs - Date.now()
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
        // Dropped while held (drop): nothing to post.
        if (waiting.length === 0) break
        lastBatchAt = Date.now()
        const batch = waiting.splice(0, waiting.length)
        await post(batch).catch((error: unknown) => {
          const failure = error instanceof Error ? error : new Error(String(error))
          for (const item of batch) item.reject(failure)
        })
      }
    } finally {
      sending = false
    }
  }

  return {
    send(raw) {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ raw, resolve, reject })
        if (!sending) void drain()
      })
    },
    drop(error) {
      for (const item of waiting.splice(0, waiting.length)) item.reject(error)
    },
  }
}
