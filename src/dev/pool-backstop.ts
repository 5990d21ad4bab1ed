import { postJsonRpcBatch, type RpcCall } from '../chain/json-rpc-batch.ts'

/**
 * anvil's automine can leave ready transactions in its pool: it mines one block per wake-up, so what
 * did not fit or arrived out of nonce order (foundry-rs/foundry#10122) waits for the next arrival, and
 * on a dev chain none may come. Seen here in 1 to 3 of 7 bursts of 1,000 requests, and in 5 of 9 bench
 * runs a sender's next 64 nonces sat ready while automine mined only empty blocks (one per replacement
 * the sender sent) until one `evm_mine` took them all.
 *
 * So while automine is on, a pool holding ready transactions with no block *with transactions* for
 * `idleMs` is mined with `evm_mine`. A pool that is non-empty while such blocks keep coming is a busy
 * chain, not a stuck one, and is left alone; with automine off (a test driving the chain by hand) the
 * pool is the test's business. anvil's own backstop, `--block-time` with `--mixed-mining`, was tried
 * and dropped: its memory grew to 840 MB over 3,000 blocks against 98 MB without it.
 */
export interface PoolBackstop {
  /** `evm_mine` calls made so far. */
  readonly flushes: number
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
  let lastBlock = -1
  let lastTxBlockAt = Date.now()
  let checking = false

  async function check(): Promise<void> {
    const [latest, status, automine] = await rpcBatch<[LatestBlock, { pending: string }, boolean]>(rpcUrl, [
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
    if (!automine || Number(status.pending) === 0 || now - lastTxBlockAt < idleMs) return
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
    stop: () => clearInterval(timer),
  }
}

/** The results of `calls`, in order; throws naming the first call the node refused. */
async function rpcBatch<T extends unknown[]>(rpcUrl: string, calls: RpcCall[]): Promise<T> {
  const outcomes = await postJsonRpcBatch(rpcUrl, calls, 5_000)
  return outcomes.map((outcome, index) => {
    if (!outcome.ok) throw new Error(`${calls[index]?.[0]}: ${outcome.message}`)
    return outcome.result
  }) as T
}
