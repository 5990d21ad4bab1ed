import { setTimeout as delay } from 'node:timers/promises'
import { z } from 'zod'

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

const poolSection = z.record(z.string(), z.record(z.string(), z.unknown())).catch({})
const poolContent = z.object({ pending: poolSection, queued: poolSection })

/** One transaction of the node's pool: its sender and nonce as the pool names them, and the rest. */
export interface PooledTransaction {
  from: string
  nonce: number
  tx: unknown
}

/**
 * Every transaction the node's pool holds, queued ones too (`txpool_content`: geth, Nethermind,
 * Erigon, Besu, anvil; the whole pool, so read only when Redis lost what feedrunner sent). Undefined
 * when the node does not tell.
 */
export async function poolTransactions(send: RpcSend): Promise<PooledTransaction[] | undefined> {
  let answer: unknown
  try {
    answer = await send<unknown>('txpool_content', [])
  } catch {
    return undefined
  }
  const content = poolContent.safeParse(answer)
  if (!content.success) return undefined
  return [content.data.pending, content.data.queued].flatMap((section) =>
    Object.entries(section).flatMap(([from, txs]) =>
      Object.entries(txs).map(([nonce, tx]) => ({ from, nonce: Number(nonce), tx })),
    ),
  )
}

/**
 * The nonces the node's pool holds of each address, queued ones too: a transaction behind a nonce
 * the node never got (its broadcast lost, the node restarted, a process died before sending it)
 * waits there, `queued`, counted by no `eth_getTransactionCount`, and is mined the moment anyone
 * spends the nonce below it. Undefined when the node does not tell.
 */
export async function pooledNonces(
  send: RpcSend,
  addresses: readonly string[],
): Promise<Map<string, number[]> | undefined> {
  const pooled = await poolTransactions(send)
  if (!pooled) return undefined
  const byAddress = new Map<string, number[]>()
  for (const address of addresses) {
    const key = address.toLowerCase()
    const nonces = pooled.filter((tx) => tx.from.toLowerCase() === key).map((tx) => tx.nonce)
    byAddress.set(
      key,
      [...new Set(nonces)].filter(Number.isInteger).sort((a, b) => a - b),
    )
  }
  return byAddress
}

/**
 * Waits until what the node's pool held of each key when called is mined (the key's `latest` count
 * reaches the `pending` one read first, or one above the highest nonce `pooled` says the pool holds
 * of it, queued behind a gap too; transactions sent meanwhile are not waited for) or gone from the
 * pool, or until `boundMs` passed; `onWaiting` hears how many it waits for, once, before it waits.
 * The keys' counts as last read, and whether nothing waited for is still pooled.
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
    /** What the pool holds of each key (pooledNonces), where the node tells. */
    pooled?: ReadonlyMap<string, readonly number[]>
  },
): Promise<{ counts: TransactionCounts[]; mined: boolean }> {
  const read = () => Promise.all(addresses.map((address) => transactionCounts(send, address)))
  let counts = await read()
  const queuedTo = addresses.map(
    (address) => (options.pooled?.get(address.toLowerCase())?.at(-1) ?? -1) + 1,
  )
  const targets = counts.map((count, index) => Math.max(count.pending, queuedTo[index]!))
  // Or gone from the pool: a node that dropped one (evicted, or a reorg it never put back) leaves
  // the key's later ones unminable, and its pending count falls back to its mined one. Ones known
  // queued behind a gap are waited for: the key's owner fills the gap (key-recovery.ts).
  const mined = () =>
    counts.every(
      (count, index) =>
        count.latest >= targets[index]! ||
        (count.pending <= count.latest && queuedTo[index]! <= count.pending),
    )
  if (mined()) return { counts, mined: true }
  options.onWaiting?.(counts.reduce((sum, count, index) => sum + targets[index]! - count.latest, 0))
  const until = Date.now() + options.boundMs
  const { signal } = options
  while (!mined() && Date.now() < until) {
    await delay(options.pollIntervalMs, undefined, { signal }).catch(() => undefined)
    if (signal?.aborted) break
    counts = await read()
  }
  return { counts, mined: mined() }
}
