import { z } from 'zod'

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
}

interface Waiting {
  raw: string
  resolve: () => void
  reject: (error: Error) => void
}

const batchAnswer = z.array(
  z.object({
    id: z.number(),
    result: z.unknown().optional(),
    error: z.object({ message: z.string() }).passthrough().optional(),
  }),
)

/** Error text of a JSON-RPC answer that means "nothing to do": the node has it, or the nonce is spent. */
export type ToleratedError = (message: string) => boolean

export function createOrderedBroadcaster(rpcUrl: string, tolerated: ToleratedError, timeoutMs = 30_000): OrderedBroadcaster {
  const waiting: Waiting[] = []
  let sending = false

  async function post(batch: readonly Waiting[]): Promise<void> {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(batch.map((item, id) => ({ jsonrpc: '2.0', id, method: 'eth_sendRawTransaction', params: [item.raw] }))),
      signal: AbortSignal.timeout(timeoutMs),
    })
    if (!response.ok) throw new Error(`eth_sendRawTransaction: the node answered HTTP ${response.status}`)
    const answers = new Map(batchAnswer.parse(await response.json()).map((answer) => [answer.id, answer]))
    batch.forEach((item, id) => {
      const answer = answers.get(id)
      if (!answer) item.reject(new Error('eth_sendRawTransaction: the node did not answer this transaction'))
      else if (answer.error && !tolerated(answer.error.message)) item.reject(new Error(`eth_sendRawTransaction: ${answer.error.message}`))
      else item.resolve()
    })
  }

  async function drain(): Promise<void> {
    sending = true
    try {
      while (waiting.length > 0) {
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
  }
}
