import type { Log } from 'ethers'
import { reasonOf } from '../../config/dependency-health.ts'
import { FeedrunnerError } from '../../config/errors.ts'
import { PoolProvider } from '../endpoints/pool-provider.ts'
import { CANCEL_ORACLE_REQUEST_TOPIC, ORACLE_REQUEST_TOPIC } from '../operator.ts'
import { RecentHeaders } from '../recent-headers.ts'
import {
  connectProvider,
  headHeaderOf,
  HeadTrackingWebSocketProvider,
  type ChainProvider,
  type HeadHeader,
} from '../provider.ts'

/** The head a scan works from; its own and its parent's hash answer most canonical-hash questions. */
export type HeadRef = HeadHeader

/** What the listener reads from the chain: heads, block hashes and the Operators' logs. */
export interface ChainReader {
  /** The provider (connected on first use) and the chain id it serves. */
  provider(): Promise<ChainProvider>
  readonly chainId: number | undefined
  /** True when the listener made the provider itself (and so destroys it). */
  readonly ownsProvider: boolean
  /** The provider if one is connected, without connecting. */
  readonly connected: ChainProvider | undefined
  blockHash(number: number): Promise<string | null>
  /** The canonical hash at `number`, from the head when it tells, else from the node. */
  canonicalHash(head: HeadRef, number: number): Promise<string | null>
  /** The canonical hash at `number` when the head (or its `newHeads` chain) already tells it. */
  knownCanonicalHash(head: HeadRef, number: number): string | undefined
  /** The header of block `number` when the headers given or read link down to it from `head`. */
  knownCanonicalHeader(head: HeadRef, number: number): HeadHeader | undefined
  /** Whether a header given or read had a bloom with a bit set (RecentHeaders.bloomsFilled). */
  readonly bloomsFilled: boolean
  currentHead(): Promise<HeadRef | undefined>
  /**
   * The Operators' request and cancel logs of the range, in chain order. Its last block is read by
   * its hash at `head` (EIP-234), together with the rest: a node that has not got it refuses, where
   * a range read past its head may be answered short (see readRange).
   */
  readLogs(from: number, to: number, head: HeadRef): Promise<Log[]>
}

export interface ChainReaderOptions {
  provider?: ChainProvider
  rpcUrl?: string
  chainId?: number
  /** The Operators whose logs are read: a list, or a getter that answers the current one. */
  operators: readonly string[] | (() => readonly string[])
  pollIntervalMs: number
  maxBlockRange: number
}

export function createChainReader(options: ChainReaderOptions): ChainReader {
  return new OperatorChainReader(options)
}

/**
 * Reads the chain for the listener: the provider connected on first use, the heads and block hashes
 * a scan needs (from the headers notified or read when they tell, else from the node), and the
 * Operators' logs in ranges the node must have.
 */
class OperatorChainReader implements ChainReader {
  readonly ownsProvider: boolean
  private chainProvider: ChainProvider | undefined
  private knownChainId: number | undefined
  /** The highest head a scan has worked from. */
  private lastHeadNumber = -1
  /** The headers read over HTTP (over a WebSocket the provider keeps the notified ones). */
  private readonly readHeaders = new RecentHeaders()
  private readonly operators: () => readonly string[]

  constructor(private readonly options: ChainReaderOptions) {
    this.chainProvider = options.provider
    this.ownsProvider = options.provider === undefined
    this.knownChainId = options.chainId
    const { operators } = options
    this.operators = typeof operators === 'function' ? operators : () => operators
  }

  get chainId(): number | undefined {
    return this.knownChainId
  }

  get connected(): ChainProvider | undefined {
    return this.chainProvider
  }

  get bloomsFilled(): boolean {
    return this.recent().bloomsFilled
  }

  async provider(): Promise<ChainProvider> {
    if (!this.chainProvider) {
      if (!this.options.rpcUrl)
        throw new Error('createRequestListener: give a provider or an rpcUrl')
      this.chainProvider = await connectProvider(this.options.rpcUrl, {
        chainId: this.options.chainId,
        pollingIntervalMs: this.options.pollIntervalMs,
      })
    }
    if (this.knownChainId === undefined)
      this.knownChainId = Number((await this.chainProvider.getNetwork()).chainId)
    return this.chainProvider
  }

  async blockHash(number: number): Promise<string | null> {
    return (await this.readHeader(`0x${number.toString(16)}`))?.hash ?? null
  }

  async canonicalHash(head: HeadRef, number: number): Promise<string | null> {
    return this.knownCanonicalHash(head, number) ?? (await this.blockHash(number))
  }

  /**
   * The canonical hash at `number` when the head already tells it (the head or its parent), or the
   * headers notified or read link down to it, so a scan asks the node for no block but the head, even
   * one that fell several blocks behind.
   */
  knownCanonicalHash(head: HeadRef, number: number): string | undefined {
    return this.recent().canonicalHash(head, number)
  }

  knownCanonicalHeader(head: HeadRef, number: number): HeadHeader | undefined {
    return this.recent().canonicalHeader(head, number)
  }

  /**
   * The chain's head: the one the last `newHeads` notification carried when it is newer than the head
   * of the previous scan (the scan it woke), else the node's answer for `latest`.
   */
  async currentHead(): Promise<HeadRef | undefined> {
    const connected = await this.provider()
    const notified =
      connected instanceof HeadTrackingWebSocketProvider ? connected.lastHead : undefined
    const head =
      notified && notified.number > this.lastHeadNumber ? notified : await this.readHeader('latest')
    if (head) this.lastHeadNumber = Math.max(this.lastHeadNumber, head.number)
    return head
  }

  async readLogs(from: number, to: number, head: HeadRef): Promise<Log[]> {
    const logs: Log[] = []
    const addresses = [...this.operators()]
    // No Operator: nothing to read (an empty address list would ask a node for every contract's logs).
    if (addresses.length === 0) return logs
    const topics = [[ORACLE_REQUEST_TOPIC, CANCEL_ORACLE_REQUEST_TOPIC]]
    const range = this.options.maxBlockRange
    for (let start = from; start <= to; start += range) {
      const end = Math.min(to, start + range - 1)
      logs.push(...(await this.readRange({ address: addresses, topics }, start, end, head)))
    }
    return logs
      .filter((log) => !log.removed)
      .sort((a, b) => a.blockNumber - b.blockNumber || a.index - b.index)
  }

  /**
   * The logs of blocks `from`-`to`: the last by its hash, the others (if any) by number, both calls
   * made together, so one node answers both (ethers sends them as one JSON-RPC batch over HTTP; a
   * WebSocket is one node's). A node behind a load balancer may lag the one that told the head;
   * asked for a range past its head it should refuse, but some answer with the logs they have, and
   * the listener would move past the rest. Asked for a block by a hash it does not know, every node
   * refuses (EIP-234), and a node that has the last block has those below it.
   */
  private async readRange(
    filter: { address: string[]; topics: string[][] },
    from: number,
    to: number,
    head: HeadRef,
  ): Promise<Log[]> {
    const provider = await this.provider()
    const lastHash = this.knownCanonicalHash(head, to) ?? (await this.blockHash(to))
    if (!lastHash) throw notYet(from, to, `no block ${to}`)
    const reads = [provider.getLogs({ ...filter, blockHash: lastHash })]
    if (from < to) reads.push(provider.getLogs({ ...filter, fromBlock: from, toBlock: to - 1 }))
    return (await Promise.all(reads).catch(notYetThere(from, to))).flat()
  }

  /** Over a WebSocket the provider keeps the notified headers; over HTTP the reader keeps those it read. */
  private recent(): RecentHeaders {
    const provider = this.chainProvider
    return provider instanceof HeadTrackingWebSocketProvider
      ? provider.recentHeaders
      : this.readHeaders
  }

  /** A header read from the node, kept: a later scan links down through it instead of asking again. */
  private async readHeader(tag: string): Promise<HeadRef | undefined> {
    const read = await header(await this.provider(), tag)
    if (read) this.recent().note(read)
    return read
  }
}

/**
 * A block's header, read raw: ethers' `getBlock` builds a whole Block object (every transaction
 * hash checked and copied) for the few fields a scan needs (headHeaderOf), once per head. A
 * block the node does not have is undefined; an answer of another shape is an error.
 */
async function header(provider: ChainProvider, tag: string): Promise<HeadRef | undefined> {
  // A pool's head is read once for every reader of the chain (EndpointPool.latestHeader).
  const block: unknown =
    tag === 'latest' && provider instanceof PoolProvider
      ? await provider.latestHeader()
      : await provider.send('eth_getBlockByNumber', [tag, false])
  if (block === null) return undefined
  const parsed = headHeaderOf(block)
  if (!parsed)
    throw new FeedrunnerError(
      `eth_getBlockByNumber(${tag}): the node answered with no block number, hash and parent hash`,
      { kind: 'upstream' },
    )
  return parsed
}

/**
 * The node told a head past blocks it then could not give the logs of: it "has not got them yet".
 * Behind a load balancer one backend lags the others now and then, so this is `unavailable` and the
 * next scan reads the blocks again (below); the listener's stall report (stall-report.ts) says it
 * when it lasts.
 */
export class BlocksNotThereYet extends FeedrunnerError {
  constructor(
    readonly from: number,
    readonly to: number,
    /** The node's own words, shortened. */
    readonly answer: string,
    cause?: unknown,
  ) {
    super(
      `eth_getLogs for blocks ${from}-${to}: the node has not got them yet (it answered "${answer}"); the next scan reads them again`,
      { kind: 'unavailable', cause },
    )
    this.name = 'BlocksNotThereYet'
  }
}

/**
 * What a node that has not got the range's last blocks yet answers eth_getLogs (the execution API's
 * "block range extends beyond current head block", and the clients' own words for a block they do not
 * know). Behind a load balancer one backend lags the others now and then: the head came from one, the
 * logs from another.
 */
const NOT_YET_THERE =
  /beyond current head|unknown block|header not found|block not found|after last accepted block/i

/** The error of a read the node cannot answer yet: `unavailable`, so the scan reads it again, quietly. */
function notYet(from: number, to: number, answer: string, cause?: unknown): BlocksNotThereYet {
  // The node's words go to a warning once a stall lasts: its first line, any URL cut to host and port.
  return new BlocksNotThereYet(from, to, reasonOf(answer).slice(0, 120), cause)
}

/**
 * A node's refusal of a range it has not got yet becomes notYet; any other failure is left as it is.
 * The node's words are read here, once.
 */
function notYetThere(from: number, to: number): (error: unknown) => never {
  return (error) => {
    const answer = (error as { error?: { message?: unknown } } | null)?.error?.message
    if (typeof answer === 'string' && NOT_YET_THERE.test(answer))
      throw notYet(from, to, answer, error)
    throw error
  }
}
