import { formatDuration } from '../../config/dependency-health.ts'
import type { BlocksNotThereYet } from './chain-reader.ts'

export interface StallLog {
  warn(fields: Record<string, unknown>, message: string): void
  info(fields: Record<string, unknown>, message: string): void
}

export interface StallReportOptions {
  /** How messages name the chain: `chain 137 (polygon)` (asked when a line is said). */
  label: () => string
  log: StallLog
  /** While the scan stays stalled, one line this often (OUTAGE_REPORT_INTERVAL_MS). */
  reportEveryMs: number
  /** A stall shorter than this is not said (STALL_REPORT_AFTER_MS). */
  reportAfterMs?: number
  /** The clock, for tests. It only times what is said, never what is done. */
  now?: () => number
}

/**
 * How long the listener's reads may find their blocks not there yet before it says so. A backend of
 * a load balancer that lags a block or two is read past at the next scan (test/reliability/
 * lagging-node.test.ts: every other read lags, and nothing is said); one that stays behind holds
 * every request after its blocks, with nothing else to show for it but the lag metric.
 */
export const STALL_REPORT_AFTER_MS = 30_000

export interface StallReport {
  /** A scan found its blocks not there yet. */
  failed(error: BlocksNotThereYet): void
  /** A scan read its blocks: a stall that was said ends with a line. */
  scanned(): void
}

/**
 * The listener's stalls as state changes, as DependencyHealth says an outage: a line once the scan has
 * found its blocks not there for `reportAfterMs`, one each `reportEveryMs` while that lasts (with the
 * reads refused meanwhile), and one when a scan reads them. Every scan in between is quiet.
 */
export function createStallReport(options: StallReportOptions): StallReport {
  const now = options.now ?? Date.now
  const reportAfterMs = options.reportAfterMs ?? STALL_REPORT_AFTER_MS
  let stall:
    { since: number; refused: number; refusedSinceLine: number; lastLineAt?: number } | undefined

  const fields = (error: BlocksNotThereYet, stalledMs: number) => ({
    chain: options.label(),
    state: 'stalled',
    fromBlock: error.from,
    toBlock: error.to,
    stalledMs,
    answer: error.answer,
  })

  return {
    failed(error) {
      const at = now()
      stall ??= { since: at, refused: 0, refusedSinceLine: 0 }
      stall.refused += 1
      stall.refusedSinceLine += 1
      const stalledMs = at - stall.since
      if (stalledMs < reportAfterMs) return
      if (stall.lastLineAt === undefined) {
        options.log.warn(
          fields(error, stalledMs),
          `${options.label()}: the listener has not been able to read blocks ${error.from}-${error.to} for ${formatDuration(stalledMs)}: the node told a head past them, then answered "${error.answer}". Requests in those blocks and after wait. One node behind a load balancer is stuck or far behind the others: check its backends, or give the chain an endpoint of its own (RPC_URL, or the chain's endpoints in CHAINS_FILE)`,
        )
      } else if (at - stall.lastLineAt >= options.reportEveryMs) {
        options.log.warn(
          { ...fields(error, stalledMs), refused: stall.refusedSinceLine },
          `${options.label()}: the listener still cannot read blocks ${error.from}-${error.to} after ${formatDuration(stalledMs)}: ${stall.refusedSinceLine} reads refused since the last line`,
        )
      } else return
      stall.lastLineAt = at
      stall.refusedSinceLine = 0
    },
    scanned() {
      if (stall?.lastLineAt !== undefined) {
        const stalledMs = now() - stall.since
        options.log.info(
          { chain: options.label(), state: 'reading', stalledMs, refused: stall.refused },
          `${options.label()}: the listener reads its blocks again after ${formatDuration(stalledMs)}; ${stall.refused} reads were refused in all`,
        )
      }
      stall = undefined
    },
  }
}
