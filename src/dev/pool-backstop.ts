import { postJsonRpcBatch, type RpcCall } from '../chain/sender/json-rpc-batch.ts'

/**
 * anvil's automine can leave ready transactions in its pool: it mines one block per wake-up, so what
 * did not fit or arrived out of nonce order (foundry-rs/foundry#10122) waits for the next arrival, and
 * on a dev chain none may come. Seen here in 1 to 3 of 7 bursts of 1,000 requests, and in 5 of 9 bench
 * runs a sender's next 64 nonces sat ready while automine mined only empty blocks (one per replacement
 * the sender sent) until one `evm_mine` took them all.
 *
 * So while automine is on, a pool holding ready transactions with no block *with transactions* for
 * `idleMs`, and whose number of ready transactions has not changed for as long, is mined with
 * `evm_mine`. The second condition came later: on a loaded machine anvil can spend more than `idleMs`
 * over a burst, and an `evm_mine` while it is still mining lost transactions (anvil 1.7 dropped most of
 * a burst of 1,000 from its pool, never mined; README, Performance, What is left). A pool that is
 * non-empty while such blocks keep coming is a busy chain, not a stuck one, and is left alone; with automine off (a test driving the chain by hand) the
 * pool is the test's business. anvil's own backstop, `--block-time` with `--mixed-mining`, was tried
 * and dropped: its memory grew to 840 MB over 3,000 blocks against 98 MB without it.
 *
 * anvil can also file a transaction as *queued* although its nonce is its sender's next (seen once in a
 * burst of 1,000; `anvil_setNonce` makes one), and then neither automine nor `evm_mine` takes it. Such a
 * sender's pool transactions are taken out (`anvil_removePoolTransactions`) and sent again, in nonce
 * order, from their raw bytes.
 */
export interface PoolBackstop {
  /** `evm_mine` calls made so far. */
  readonly flushes: number
  /** Transactions taken out of anvil's queue, where their nonce was next, and sent again. */
  readonly resent: number
  stop(): void
}

export interface PoolBackstopOptions {
  /** How long a ready pool may wait without a block with transactions. */
  idleMs?: number
  checkEveryMs?: number
}

interface LatestBlock {
  number: string
  transactions: unknown[]
}

export function startPoolBackstop(rpcUrl: string, options: PoolBackstopOptions = {}): PoolBackstop {
  const idleMs = options.idleMs ?? 300
  let flushes = 0
  let resent = 0
  // A queue with a gap in front of it is normal and stays: it is looked into at most once a second.
  let queueLookedAt = 0
  let lastBlock = -1
  let lastTxBlockAt = Date.now()
  let lastPending = -1
  let pendingChangedAt = Date.now()
  let checking = false

  async function check(): Promise<void> {
    const [latest, status, automine] = await rpcBatch<
      [LatestBlock, { pending: string; queued: string }, boolean]
    >(rpcUrl, [
      ['eth_getBlockByNumber', ['latest', false]],
      ['txpool_status', []],
      ['anvil_getAutomine', []],
    ])
    const now = Date.now()
    const number = Number(latest.number)
    if (number !== lastBlock) {
      if (lastBlock >= 0 && latest.transactions.length > 0) lastTxBlockAt = now
      lastBlock = number
    }
    const pending = Number(status.pending)
    if (pending !== lastPending) {
      lastPending = pending
      pendingChangedAt = now
    }
    // A pool whose size still moves is being filled or mined: a loaded anvil can take longer than
    // idleMs over a block, and an evm_mine beside the block it is building loses transactions.
    if (!automine || now - lastTxBlockAt < idleMs || now - pendingChangedAt < idleMs) return
    if (Number(status.queued) > 0 && now - queueLookedAt >= 1_000) {
      queueLookedAt = now
      resent += await resendQueuedAtNextNonce(rpcUrl)
    }
    if (pending === 0) return
    await rpcBatch(rpcUrl, [['evm_mine', []]])
    flushes += 1
    lastTxBlockAt = Date.now()
  }

  const timer = setInterval(() => {
    if (checking) return
    checking = true
    // A chain that is briefly unreachable (stopping, restarting) is checked again next time.
    check()
      .catch(() => undefined)
      .finally(() => {
        checking = false
      })
  }, options.checkEveryMs ?? 100)
  timer.unref()

  return {
    get flushes() {
      return flushes
    },
    get resent() {
      return resent
    },
    stop: () => clearInterval(timer),
  }
}

type PoolByNonce = Record<string, { hash: string }>
interface PoolContent {
  pending: Record<string, PoolByNonce>
  queued: Record<string, PoolByNonce>
}

/**
 * Re-sends the pool transactions of every sender whose lowest queued nonce is its next one (a queue
 * entry with no gap in front of it); returns how many were sent again.
 */
async function resendQueuedAtNextNonce(rpcUrl: string): Promise<number> {
  const [content] = await rpcBatch<[PoolContent]>(rpcUrl, [['txpool_content', []]])
  const senders = Object.keys(content.queued)
  if (senders.length === 0) return 0
  const nonces = await rpcBatch<string[]>(
    rpcUrl,
    senders.map((sender) => ['eth_getTransactionCount', [sender, 'latest']] as RpcCall),
  )
  let count = 0
  for (const [index, sender] of senders.entries()) {
    const queued = Object.keys(content.queued[sender] ?? {}).map(Number)
    if (Math.min(...queued) !== Number(nonces[index])) continue
    const inPool = { ...content.pending[sender], ...content.queued[sender] }
    const hashes = Object.entries(inPool)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([, tx]) => tx.hash)
    const raws = await rpcBatch<string[]>(
      rpcUrl,
      hashes.map((hash) => ['eth_getRawTransactionByHash', [hash]] as RpcCall),
    )
    await rpcBatch(rpcUrl, [['anvil_removePoolTransactions', [sender]]])
    // In one batch, in nonce order: anvil takes a batch's transactions in the order given.
    await postJsonRpcBatch(
      rpcUrl,
      raws.map((raw) => ['eth_sendRawTransaction', [raw]] as RpcCall),
      5_000,
    )
    count += raws.length
  }
  return count
}

/** The results of `calls`, in order; throws naming the first call the node refused. */
async function rpcBatch<T extends unknown[]>(rpcUrl: string, calls: RpcCall[]): Promise<T> {
  const outcomes = await postJsonRpcBatch(rpcUrl, calls, 5_000)
  return outcomes.map((outcome, index) => {
    if (!outcome.ok) throw new Error(`${calls[index]?.[0]}: ${outcome.message}`)
    return outcome.result
  }) as T
}
