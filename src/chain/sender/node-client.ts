import type { JsonRpcApiProvider, JsonRpcProvider } from 'ethers'
import { BlockInterval } from '../block-interval.ts'
import type { EndpointPool } from '../endpoints/pool.ts'
import { connectProvider } from '../provider.ts'
import { revertReasonOf } from '../revert.ts'
import { dynamicFees, legacyFees } from './fee-policy.ts'
import {
  createJsonRpcClient,
  JsonRpcCallError,
  postJsonRpcBatch,
  type RpcCall,
  type RpcOutcome,
} from './json-rpc-batch.ts'
import type { Fees, Head, UnsignedTx } from './model.ts'
import { refusalOf } from './node-refusal.ts'

/** What the sender asks of the chain's node, and the little it remembers of its answers. */
export interface SenderNode {
  /**
   * The latest head known (undefined before the first): the last one read, or a newer one the pool
   * read or was notified of for another reader of the chain (the listener, which sees a request's
   * block before the sender is asked to answer it).
   */
  readonly head: Head | undefined
  /** The chain id, known once connected (or given). */
  readonly chainId: number | undefined
  /** Connects ethers' provider (for eth_call) and learns the chain id. */
  connect(): Promise<void>
  /** One raw JSON-RPC call, batched with the others of the same tick. */
  send<T>(method: string, params: unknown[]): Promise<T>
  readHead(): Promise<Head>
  /**
   * The chain's block time in seconds (0 while it keeps none): a pool's, which sees every head
   * the chain's readers see (the listener's while no key has work too), else from this node's reads.
   */
  secondsPerBlock(): number
  /** The head read within two poll intervals, else read now (one read shared by every caller). */
  recentHead(): Promise<Head>
  /** The market's fees now (the priority fee is asked once, then kept). */
  currentFees(): Promise<Fees>
  /** Sends signed bytes; a refusal that means "nothing to do" counts as sent. */
  broadcast(raw: string): Promise<void>
  /** Sends a batch of signed transactions in order (to every endpoint of a pool); one outcome each. */
  broadcastBatch(calls: readonly RpcCall[]): Promise<RpcOutcome[]>
  /** Runs the transaction against the state at `blockTag`; the revert reason, or undefined if it would succeed. */
  simulate(from: string, tx: UnsignedTx, blockTag?: string | number): Promise<string | undefined>
  balanceOf(address: string): Promise<bigint>
  destroy(): void
}

export interface SenderNodeOptions {
  rpcUrl: string
  chainId?: number
  pollIntervalMs: number
  priorityFeeWei?: bigint
  /** RPC_MAX_RESPONSE_BYTES: the largest answer read from the node. */
  rpcMaxResponseBytes?: number
  /**
   * The chain's endpoint pool: reads go to its healthiest endpoint, broadcasts to all of them; with
   * `provider` (the pool's) for eth_call. Without it, everything goes to `rpcUrl`.
   */
  pool?: EndpointPool
  provider?: JsonRpcApiProvider
}

/** A block header as the node sends it (the fields the sender reads). */
interface RawHeader {
  number: string
  hash: string
  parentHash: string
  timestamp: string
  baseFeePerGas?: string
}

function headOf(block: RawHeader): Head {
  return {
    number: Number(block.number),
    hash: block.hash,
    parentHash: block.parentHash,
    baseFee: block.baseFeePerGas ? BigInt(block.baseFeePerGas) : null,
    timestamp: Number(block.timestamp),
  }
}

export function createSenderNode(options: SenderNodeOptions): SenderNode {
  return new ChainSenderNode(options)
}

/**
 * The node behind the sender: raw calls batched to one URL or through the chain's endpoint pool,
 * ethers' provider only for eth_call (whose revert data it decodes), and the latest head with its age.
 */
class ChainSenderNode implements SenderNode {
  private readonly url: string
  private readonly pool: EndpointPool | undefined
  /** Raw calls (heads, nonces, receipts, broadcasts) without a pool go through a batching client. */
  private readonly client: ReturnType<typeof createJsonRpcClient> | undefined
  private provider: JsonRpcProvider | undefined
  private knownChainId: number | undefined
  private priorityFee: bigint | undefined
  private lastHead: Head | undefined
  /** When (Date.now()) `lastHead` was read. */
  private headReadAt = 0
  /** The read under way that every caller of recentHead shares meanwhile. */
  private headRead: Promise<Head> | undefined
  private readonly pace = new BlockInterval()
  // The poll loop reads the head at least every poll interval while a key has work, and not at all
  // while none has: fees signed after such a pause come from a head read then.
  private readonly headMaxAgeMs: number

  constructor(private readonly options: SenderNodeOptions) {
    this.url = httpUrlOf(options.rpcUrl)
    this.pool = options.pool
    this.knownChainId = options.chainId
    this.priorityFee = options.priorityFeeWei
    this.headMaxAgeMs = 2 * options.pollIntervalMs
    this.client = this.pool
      ? undefined
      : createJsonRpcClient(this.url, undefined, options.rpcMaxResponseBytes)
  }

  get head(): Head | undefined {
    return this.latestKnown()
  }

  get chainId(): number | undefined {
    return this.knownChainId
  }

  async connect(): Promise<void> {
    await this.rpc()
  }

  send<T>(method: string, params: unknown[]): Promise<T> {
    return this.pool ? this.pool.request<T>(method, params) : this.client!.call<T>(method, params)
  }

  broadcastBatch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    return this.pool
      ? this.pool.broadcastBatch(calls)
      : postJsonRpcBatch(this.url, calls, undefined, this.options.rpcMaxResponseBytes)
  }

  async readHead(): Promise<Head> {
    // Through a pool, the head is the chain's one shared read (EndpointPool.latestHeader): one a
    // poll interval old at most, as the poll loop would have read it itself.
    const block = (await (this.pool
      ? this.pool.latestHeader(this.options.pollIntervalMs)
      : this.send('eth_getBlockByNumber', ['latest', false]))) as RawHeader | null
    if (!block) throw new Error('the node returned no latest block')
    this.headReadAt = Date.now()
    const head = headOf(block)
    this.lastHead = head
    this.pace.observe(head)
    return head
  }

  secondsPerBlock(): number {
    return this.pool ? this.pool.secondsPerBlock() : this.pace.secondsPerBlock()
  }

  recentHead(): Promise<Head> {
    const known = this.latestKnown()
    if (known && Date.now() - this.headReadAt <= this.headMaxAgeMs) return Promise.resolve(known)
    this.headRead ??= this.readHead().finally(() => (this.headRead = undefined))
    return this.headRead
  }

  async currentFees(): Promise<Fees> {
    const known = await this.recentHead()
    if (this.priorityFee === undefined) {
      this.priorityFee =
        known.baseFee === null
          ? 0n
          : BigInt(
              await this.send<string>('eth_maxPriorityFeePerGas', []).catch(() => '0x3b9aca00'),
            )
    }
    if (known.baseFee === null)
      return legacyFees(BigInt(await this.send<string>('eth_gasPrice', [])))
    return dynamicFees(known.baseFee, this.priorityFee)
  }

  async broadcast(raw: string): Promise<void> {
    try {
      if (!this.pool) await this.send('eth_sendRawTransaction', [raw])
      else {
        const [outcome] = await this.pool.broadcastBatch([['eth_sendRawTransaction', [raw]]])
        if (outcome && !outcome.ok)
          throw new JsonRpcCallError('eth_sendRawTransaction', outcome.message)
      }
    } catch (error) {
      if (refusalOf(error) === 'tolerated') return
      throw error
    }
  }

  async simulate(
    from: string,
    tx: UnsignedTx,
    blockTag?: string | number,
  ): Promise<string | undefined> {
    return simulateOn(await this.rpc(), from, tx, blockTag)
  }

  balanceOf(address: string): Promise<bigint> {
    return this.send<string>('eth_getBalance', [address, 'latest']).then(BigInt)
  }

  /** A pool's provider is its runner's to destroy. */
  destroy(): void {
    this.provider?.destroy()
  }

  /** ethers' provider for eth_call: the pool's, else one connected here on first use. */
  private async rpc(): Promise<JsonRpcApiProvider> {
    if (this.options.provider) return this.options.provider
    if (!this.provider) {
      const connected = await connectProvider(this.url, {
        chainId: this.options.chainId,
        pollingIntervalMs: this.options.pollIntervalMs,
        maxResponseBytes: this.options.rpcMaxResponseBytes,
      })
      this.provider = connected as JsonRpcProvider
      this.knownChainId ??= Number((await this.provider.getNetwork()).chainId)
    }
    return this.provider
  }

  /** The head read, or the pool's if it knows a newer one (no call: what it last read or was told). */
  private latestKnown(): Head | undefined {
    const known = this.pool?.knownLatestHeader() as RawHeader | undefined
    // Adopted, but not as a read of this node's: recentHead still reads (through the pool, which
    // answers from what it knows while that is recent) once its own read is old.
    if (known && (!this.lastHead || Number(known.number) > this.lastHead.number))
      this.lastHead = headOf(known)
    return this.lastHead
  }
}

/** Runs the transaction against the state at `blockTag`; the revert reason, or undefined if it succeeds. */
async function simulateOn(
  provider: JsonRpcApiProvider,
  from: string,
  tx: UnsignedTx,
  blockTag: string | number = 'latest',
): Promise<string | undefined> {
  try {
    await provider.call({ from, to: tx.to, data: tx.data, gasLimit: tx.gasLimit, blockTag })
    return undefined
  } catch (error) {
    const reason = revertReasonOf(error)
    if (reason === undefined) throw error
    return reason
  }
}

/** The sender polls and sends over HTTP whatever the configured URL: a WebSocket adds nothing to either. */
export function httpUrlOf(rpcUrl: string): string {
  return rpcUrl.replace(/^ws(s?):/, 'http$1:')
}
