import type { JsonRpcProvider } from 'ethers'
import type { Logger } from '../../config/logger.ts'
import type { RunRecord, RunStore } from '../run-record.ts'
import { ORACLE_RESPONSE_TOPIC } from '../../chain/operator.ts'

/** Runs the reconciler looks at: not settled by the chain yet, as far as our records know. */
const UNSETTLED: ReadonlySet<RunRecord['state']> = new Set(['errored', 'sent', 'running'])

export interface ReconcilerOptions {
  runs: RunStore
  provider: JsonRpcProvider
  operators: readonly string[]
  log: Logger
  /** How often a pass runs. */
  everyMs: number
  /** A run written more recently than this is left to the sender that is still on it. */
  settleMs?: number
  /** How far back (by last write) runs are looked at. */
  lookBackMs?: number
}

export interface Reconciler {
  /** One pass: every unsettled run the Operator answered becomes `fulfilled`, with the mined tx. */
  pass(): Promise<{ checked: number; settled: number }>
  start(): void
  stop(): Promise<void>
}

/**
 * Makes run records agree with the chain. The sender can see an error while its transaction is mined
 * (the node went away as it answered): that run says `errored` although the request was fulfilled. The
 * Operator's `OracleResponse` log is the truth; each pass reads it for every unsettled run at once.
 */
export function createReconciler(options: ReconcilerOptions): Reconciler {
  const settleMs = options.settleMs ?? options.everyMs
  const lookBackMs = options.lookBackMs ?? 24 * 3600_000
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | undefined

  async function pass(): Promise<{ checked: number; settled: number }> {
    const now = Date.now()
    const candidates = (await options.runs.createdSince(now - lookBackMs)).filter(
      (run) => UNSETTLED.has(run.state) && lastWrite(run) <= now - settleMs,
    )
    let settled = 0
    if (candidates.length > 0) {
      const byId = new Map(candidates.map((run) => [run.requestId.toLowerCase(), run]))
      const logs = await options.provider.getLogs({
        address: [...options.operators],
        topics: [ORACLE_RESPONSE_TOPIC, [...byId.keys()]],
        fromBlock: Math.min(...candidates.map((run) => run.blockNumber)),
      })
      for (const log of logs) {
        const run = byId.get(log.topics[1]!.toLowerCase())
        if (!run || run.state === 'fulfilled') continue
        await options.runs.settleFromChain(run.requestId, {
          state: 'fulfilled',
          txHash: log.transactionHash,
          reason: run.reason
            ? `the chain shows it fulfilled (the run had said: ${run.reason})`
            : undefined,
        })
        options.log.info(
          { requestId: run.requestId, job: run.job, was: run.state, txHash: log.transactionHash },
          'run settled from the chain: its fulfilment was mined',
        )
        settled++
      }
    }
    await options.runs.markReconciled(now)
    return { checked: candidates.length, settled }
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

function lastWrite(run: RunRecord): number {
  return Math.max(
    0,
    ...Object.values(run.times).filter((at): at is number => typeof at === 'number'),
  )
}
