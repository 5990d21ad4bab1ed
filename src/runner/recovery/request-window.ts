import type { JsonRpcProvider } from 'ethers'
import type { OracleRequestEvent } from '../../chain/operator.ts'
import { closuresBetween, fateOf, isExpired, type Closure } from '../../chain/request-fate.ts'
import { openWindowStart, REBUILD_LOOK_BACK_SECONDS } from './open-requests.ts'

/**
 * What to do with a delivered request (Recovery.verdict): `closed` on chain already (not run; its
 * record says how, where Redis lost it), `expired`, `run-again` or `run`.
 */
export type Verdict =
  | { kind: 'closed'; closure: Closure }
  | { kind: 'expired' }
  | { kind: 'run-again' }
  | { kind: 'run' }

/** What the chain said of the requests in a window read again: which of them are closed already. */
interface WindowFilter {
  fromBlock: number
  upToBlock: number
  headTimestamp: number
  /** Answered or cancelled on chain, by request id. */
  closed: ReadonlyMap<string, Closure>
}

/**
 * The window of the last REBUILD_LOOK_BACK_SECONDS (chain time) that a start or a rebuild reads again,
 * and what the Operators closed in it: by it the requests delivered from there are judged.
 */
export class RequestWindow {
  private filter: WindowFilter | undefined
  /** The read of what the chain closed below the window, while one is under way (closedFrom). */
  private widening: Promise<void> | undefined

  constructor(
    private readonly chain: {
      provider: JsonRpcProvider
      operators: readonly string[]
      logRangeBlocks?: number
    },
  ) {}

  /** The window's first block, once read. */
  get fromBlock(): number | undefined {
    return this.filter?.fromBlock
  }

  get closedCount(): number {
    return this.filter?.closed.size ?? 0
  }

  /** Reads the window as it is now, and answers its first block. */
  async read(): Promise<number> {
    const window = await openWindowStart(this.chain.provider, REBUILD_LOOK_BACK_SECONDS)
    const closed = await this.closedBetween(window.fromBlock, window.head)
    this.filter = {
      fromBlock: window.fromBlock,
      upToBlock: window.head,
      headTimestamp: window.headTimestamp,
      closed,
    }
    return window.fromBlock
  }

  /** Recovery.verdict: `run` for a request after the window (or when none was read). */
  async verdict(event: OracleRequestEvent): Promise<Verdict> {
    await this.closedFrom(event.blockNumber)
    const filter = this.filter
    if (!filter || event.blockNumber > filter.upToBlock) return { kind: 'run' }
    const fate = fateOf(
      filter.closed.get(event.requestId.toLowerCase()),
      isExpired(event.cancelExpiration, filter.headTimestamp),
    )
    if (fate.state === 'open') return { kind: 'run-again' }
    if (fate.state === 'expired') return { kind: 'expired' }
    return { kind: 'closed', closure: fate }
  }

  /**
   * Reads what the Operators closed from `block` up to the window's first block, once, when a
   * request older than the window comes: a listener that reads on from a checkpoint older than the
   * window (no runner ran for longer than REBUILD_LOOK_BACK_SECONDS) delivers the requests made
   * meanwhile, and one that another node answered or its requester cancelled must not be recorded
   * refused. The backfill delivers in block order, so its first old request covers the rest; those
   * that come meanwhile wait for the same read.
   */
  private async closedFrom(block: number): Promise<void> {
    while (this.filter && block < this.filter.fromBlock) {
      if (!this.widening) {
        const current = this.filter
        this.widening = this.closedBetween(block, current.fromBlock - 1)
          .then((closed) => {
            // A rebuild meanwhile read a window of its own: this read is not its.
            if (this.filter !== current) return
            this.filter = {
              ...current,
              fromBlock: block,
              closed: new Map([...closed, ...current.closed]),
            }
          })
          .finally(() => (this.widening = undefined))
      }
      await this.widening
    }
  }

  private closedBetween(fromBlock: number, toBlock: number): Promise<Map<string, Closure>> {
    const { provider, operators, logRangeBlocks } = this.chain
    return closuresBetween(provider, {
      operators,
      fromBlock,
      toBlock,
      rangeBlocks: logRangeBlocks,
    })
  }
}
