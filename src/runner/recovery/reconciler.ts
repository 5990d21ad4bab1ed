import type { JsonRpcProvider } from 'ethers'
import type { Logger } from '../../config/logger.ts'
import type { SharedClock } from '../../metrics/index.ts'
import type { RunRecord, RunStore } from '../run-record.ts'
import { chainShows, closuresBetween, type Closure } from '../../chain/request-fate.ts'

/** Runs the reconciler looks at: not settled by the chain yet, as far as our records know. */
const UNSETTLED: ReadonlySet<RunRecord['state']> = new Set([
  'errored',
  'sent',
  'running',
  'received',
])

export interface ReconcilerOptions {
  runs: RunStore
  /**
   * Redis's clock: the runs' times are Redis's (update-run.lua), so their ages are too, whatever
   * this host's clock says. No pass runs before its first reading.
   */
  clock: SharedClock
  provider: JsonRpcProvider
  operators: readonly string[]
  log: Logger
  /** How often a pass runs. */
  everyMs: number
  /** A run written more recently than this is left to the run that is still on it. */
  settleMs?: number
  /** How far back (by creation) runs are looked at. */
  lookBackMs?: number
  /**
   * How long after its end a refused or fulfilled run is still looked at (default 10 minutes): a
   * reorg or a late mined transaction can still change what the chain says of it.
   */
  endedWatchMs?: number
  /** The widest eth_getLogs range asked at once (CHAIN_LOG_RANGE_BLOCKS). */
  logRangeBlocks?: number
  /** Runs read from Redis at once. */
  pageSize?: number
  /**
   * How many reorgs the chain's listener has seen: runs fulfilled lately are read against the chain
   * only within endedWatchMs of one (a fulfilment is taken away only by a reorg), so a quiet chain
   * costs no log read a pass. Without it, they always are.
   */
  reorgs?: () => number
}

export interface Reconciler {
  /** One pass: every unsettled run the Operator answered or whose requester cancelled it follows the chain. */
  pass(): Promise<{ checked: number; settled: number }>
  start(): void
  stop(): Promise<void>
}

/**
 * Makes run records agree with the chain. The sender can see an error while its transaction is mined
 * (the node went away as it answered), or a run can stop while its request is cancelled: such a run
 * says `errored` (or `sent`, `running`) although the request was fulfilled or cancelled. The
 * Operator's `OracleResponse` and `CancelOracleRequest` logs are the truth. Each pass pages through
 * every run of the look-back window, newest first, and reads those logs once, in bounded block ranges,
 * from the oldest unsettled run's block to the head.
 */
export function createReconciler(options: ReconcilerOptions): Reconciler {
  const window = new ReconcileWindow(options)
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | undefined

  async function pass(): Promise<{ checked: number; settled: number }> {
    const now = options.clock.now()
    if (now === undefined) return { checked: 0, settled: 0 }
    const byId = await window.runsToCheck(now)
    const settled = byId.size > 0 ? await settleFromChain(options, byId) : 0
    await options.runs.markReconciled(now)
    return { checked: byId.size + settled, settled }
  }

  return {
    pass,
    start() {
      timer = setInterval(() => {
        // One pass at a time; a pass that fails (node or Redis away) is tried again next time.
        running ??= pass()
          .catch(() => undefined)
          .finally(() => (running = undefined))
      }, options.everyMs)
      timer.unref()
    },
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}

/** Which runs a pass reads against the chain, by their states and ages on Redis's clock. */
class ReconcileWindow {
  private readonly settleMs: number
  private readonly lookBackMs: number
  private readonly endedWatchMs: number
  /** The listener's reorg count at the last pass, and when (Redis's clock) it last changed. */
  private reorgsSeen: number
  private reorgAt: number

  constructor(private readonly options: ReconcilerOptions) {
    this.settleMs = options.settleMs ?? options.everyMs
    this.lookBackMs = options.lookBackMs ?? 24 * 3600_000
    this.endedWatchMs = options.endedWatchMs ?? 10 * 60_000
    this.reorgsSeen = options.reorgs?.() ?? 0
    this.reorgAt = options.reorgs ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY
  }

  /** The runs to read against the chain now, by request id (lower case). */
  async runsToCheck(now: number): Promise<Map<string, RunRecord>> {
    const reorgs = this.options.reorgs?.() ?? 0
    if (reorgs !== this.reorgsSeen) {
      this.reorgsSeen = reorgs
      this.reorgAt = now
    }
    const unsettled = new Map<string, RunRecord>()
    const pages = this.options.runs.pagesSince(now - this.lookBackMs, this.options.pageSize)
    for await (const page of pages)
      for (const run of page)
        if (this.looksAt(run, now) && lastWrite(run) <= now - this.settleMs)
          unsettled.set(run.requestId.toLowerCase(), run)
    return unsettled
  }

  /**
   * A run not settled by the chain yet, or one that ended lately: a run refused for its expiry while
   * a fulfilment its process sent before was still in the node's pool (Redis lost what the sender
   * knew of it: a flush, a failover) is answered when that is mined; a run fulfilled by a
   * transaction a reorg then took away may be answered by another (its request was open again, and
   * a run after Redis lost its state sent a new one). The chain's word wins.
   */
  private looksAt(run: RunRecord, now: number): boolean {
    // A cron tick's or a webhook call's run has no request the Operator's logs could settle.
    if (run.trigger !== undefined && run.trigger !== 'request') return false
    if (UNSETTLED.has(run.state)) return true
    if (run.state === 'fulfilled' && this.reorgAt <= now - this.endedWatchMs) return false
    if (run.state !== 'refused' && run.state !== 'fulfilled') return false
    return (run.times[run.state] ?? 0) > now - this.endedWatchMs
  }
}

/**
 * Reads what the chain closed from the oldest run's block to the head, and settles each run whose
 * record says otherwise; the runs the chain closed leave `byId` (what is left is open on chain).
 * Answers how many it settled.
 */
async function settleFromChain(
  options: ReconcilerOptions,
  byId: Map<string, RunRecord>,
): Promise<number> {
  const closed = await closuresBetween(options.provider, {
    operators: options.operators,
    fromBlock: Math.min(...[...byId.values()].map((run) => run.blockNumber)),
    toBlock: await options.provider.getBlockNumber(),
    rangeBlocks: options.logRangeBlocks,
  })
  let settled = 0
  for (const [requestId, closure] of closed) {
    const run = byId.get(requestId)
    if (!run) continue
    byId.delete(requestId)
    if (agrees(run, closure)) continue
    await options.runs.settleFromChain(run.requestId, {
      state: closure.state,
      ...(closure.state === 'fulfilled' ? { txHash: closure.txHash } : {}),
      reason: `${chainShows(closure)}${run.reason ? ` (the run had said: ${run.reason})` : ''}`,
    })
    options.log.info(
      { requestId: run.requestId, job: run.job, was: run.state, txHash: closure.txHash },
      `run settled from the chain: ${closure.state}`,
    )
    settled++
  }
  return settled
}

/** Whether the chain's word is what the run says already: fulfilled by that transaction. */
function agrees(run: RunRecord, closure: Closure): boolean {
  return (
    run.state === 'fulfilled' &&
    closure.state === 'fulfilled' &&
    run.txHash?.toLowerCase() === closure.txHash.toLowerCase()
  )
}

function lastWrite(run: RunRecord): number {
  return Math.max(
    0,
    ...Object.values(run.times).filter((at): at is number => typeof at === 'number'),
  )
}
