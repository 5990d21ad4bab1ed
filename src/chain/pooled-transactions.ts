import { setTimeout as delay } from 'node:timers/promises'

/** One JSON-RPC call: a provider's `send`, or the sender's node client's. */
export type RpcSend = <T>(method: string, params: unknown[]) => Promise<T>

/** A key's transaction counts as the node has them: mined (`latest`) and with its pool (`pending`). */
export interface TransactionCounts {
  pending: number
  latest: number
}

/**
 * How long a process that found Redis's record of the keys' transactions gone leaves the ones in the
 * node's pool to be mined before it looks at the requests again: a price spike can hold one there
 * for a few blocks; past this, what is still pooled is the sender's to find (it watches the key).
 */
export const POOLED_MINED_BOUND_MS = 120_000

export async function transactionCounts(
  send: RpcSend,
  address: string,
): Promise<TransactionCounts> {
  const [pending, latest] = await Promise.all([
    send<string>('eth_getTransactionCount', [address, 'pending']),
    send<string>('eth_getTransactionCount', [address, 'latest']),
  ])
  return { pending: Number(pending), latest: Number(latest) }
}

/**
 * Waits until what the node's pool held of each key when called is mined (the key's `latest` count
 * reaches the `pending` one read first; transactions sent meanwhile are not waited for) or gone from
 * the pool, or until `boundMs` passed; `onWaiting` hears how many it waits for, once, before it
 * waits. The keys' counts as last read, and whether nothing waited for is still pooled.
 */
export async function waitForPooledMined(
  send: RpcSend,
  addresses: readonly string[],
  options: {
    boundMs: number
    pollIntervalMs: number
    onWaiting?: (pooled: number) => void
    /** Ends the wait early (the process is stopping): `mined` then says false. */
    signal?: AbortSignal
  },
): Promise<{ counts: TransactionCounts[]; mined: boolean }> {
  const read = () => Promise.all(addresses.map((address) => transactionCounts(send, address)))
  let counts = await read()
  const targets = counts.map((count) => count.pending)
  // Or gone from the pool: a node that dropped one (evicted, or a reorg it never put back) leaves
  // the key's later ones unminable, and its pending count falls back to its mined one.
  const mined = () =>
    counts.every((count, index) => count.latest >= targets[index]! || count.pending <= count.latest)
  if (mined()) return { counts, mined: true }
  options.onWaiting?.(counts.reduce((sum, count) => sum + count.pending - count.latest, 0))
  const until = Date.now() + options.boundMs
  const { signal } = options
  while (!mined() && Date.now() < until) {
    await delay(options.pollIntervalMs, undefined, { signal }).catch(() => undefined)
    if (signal?.aborted) break
    counts = await read()
  }
  return { counts, mined: mined() }
}
