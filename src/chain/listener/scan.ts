import { decodeOperatorLog } from '../operator.ts'
import { cancelsByRequest } from '../request-fate.ts'
import type { ChainReader, HeadRef } from './chain-reader.ts'
import type { CheckpointKeeper } from './checkpoint.ts'
import { deliver, execAll, type DeliveryOptions } from './delivery.ts'
import type { LogGate } from './log-gate.ts'
import type { ListenerStats, OperatorEvent, SpecFilter } from './types.ts'

export interface ScanParts {
  reader: ChainReader
  /** Whether a range is worth reading its logs (headers that show it holds none are not). */
  gate: LogGate
  checkpoint: CheckpointKeeper
  delivery: DeliveryOptions
  stats: ListenerStats
  specIds: () => ReadonlyMap<string, SpecFilter>
  /** Widest range of blocks one scan reads (a long backfill goes in slices). */
  maxBlocksPerScan: number
  /** Called when a scan stopped short of the head: the next one should start at once. */
  moreToScan: () => void
}

/** What one scan found confirmed and ready, and the lowest block it must read again next time. */
interface Sorted {
  ready: OperatorEvent[]
  pending: number
  holdBackFrom: number
}

/**
 * One scan: reads the logs from the checkpoint + 1 towards the head, delivers the confirmed ones
 * whose block is still canonical, and moves the checkpoint up to the first block it must read again.
 * Returns the highest block it read.
 */
export async function scanOnce(parts: ScanParts): Promise<number | undefined> {
  const { reader, checkpoint, stats } = parts
  const head = await reader.currentHead()
  if (!head) return undefined
  const from = (await checkpoint.checkForReorg(head)).number + 1
  // A long backfill goes in slices, each saved as it completes; the loop goes on at once.
  const to = Math.min(head.number, from + parts.maxBlocksPerScan - 1)
  if (to < head.number) parts.moreToScan()
  let holdBackFrom = Number.POSITIVE_INFINITY
  let pending = 0
  // The consumed markers of this scan and its checkpoint leave in one write, markers first: a
  // checkpoint never passes a log whose marker is not stored.
  const writes = parts.delivery.redis.pipeline()
  if (from <= to) {
    const sorted = sortEvents(await readEvents(parts, head, from, to), head, parts)
    pending = sorted.pending
    holdBackFrom = sorted.holdBackFrom
    const canonical = await canonicalEvents(sorted.ready, head, reader)
    for (const event of sorted.ready) {
      if (!canonical.has(event)) {
        stats.droppedByReorg += 1
        // The chain moved under us between the log read and now: read this range again next time.
        holdBackFrom = Math.min(holdBackFrom, event.blockNumber)
      }
    }
    const delivered = sorted.ready.filter((event) => canonical.has(event))
    holdBackFrom = Math.min(holdBackFrom, await deliver(delivered, writes, parts.delivery))
  }
  try {
    stats.pending = pending
    await checkpoint.advance(Math.min(to, holdBackFrom - 1), head, writes)
  } finally {
    // The markers leave even when the checkpoint's block could not be read: what was delivered stays consumed.
    await execAll(writes)
  }
  return to
}

/**
 * The range's request and cancel logs of the loaded jobs, decoded; none without a call when the
 * headers of the range show that no block of it holds one.
 */
async function readEvents(
  parts: ScanParts,
  head: HeadRef,
  from: number,
  to: number,
): Promise<OperatorEvent[]> {
  if (!parts.gate.mayHoldLogs(head, from, to)) return []
  const chainId = parts.reader.chainId as number
  const specIds = parts.specIds()
  const logs = await parts.reader.readLogs(from, to, head)
  parts.gate.checkLogs(head, logs)
  const rereadFrom = parts.gate.takeRereadFrom()
  if (rereadFrom !== undefined) {
    // Blocks skipped by blooms now known to lie may hold requests: the next scan reads them again
    // (the consumed markers keep those delivered from coming twice); this one leaves the checkpoint.
    parts.checkpoint.requestRewind(rereadFrom)
    parts.moreToScan()
  }
  return logs
    .map((log) => decodeOperatorLog(log, chainId))
    .filter(
      (event): event is OperatorEvent =>
        event !== undefined && (event.kind === 'cancel' || specIds.has(event.specId)),
    )
}

/** Splits the events into those confirmed and ready, those still waiting, and cancelled ones. */
function sortEvents(events: OperatorEvent[], head: HeadRef, parts: ScanParts): Sorted {
  const specIds = parts.specIds()
  const confirmationsFor = (event: OperatorEvent): number => {
    if (event.kind === 'request')
      return Math.max(1, specIds.get(event.specId)?.minConfirmations ?? 1)
    // A cancel carries no spec id: it waits as long as the most careful job.
    return Math.max(1, ...[...specIds.values()].map((filter) => filter.minConfirmations))
  }
  const cancels = cancelsByRequest(events)
  const sorted: Sorted = { ready: [], pending: 0, holdBackFrom: Number.POSITIVE_INFINITY }
  for (const event of events) {
    const confirmed = head.number >= event.blockNumber + confirmationsFor(event) - 1
    if (!confirmed) {
      sorted.pending += 1
      sorted.holdBackFrom = Math.min(sorted.holdBackFrom, event.blockNumber)
      continue
    }
    const cancel = event.kind === 'request' ? cancels.get(event.requestId) : undefined
    if (cancel) {
      // Cancelled before it was delivered: nothing to do once the cancel itself is final.
      if (head.number >= cancel.blockNumber + confirmationsFor(cancel) - 1)
        parts.stats.cancelledBeforeDelivery += 1
      else sorted.holdBackFrom = Math.min(sorted.holdBackFrom, event.blockNumber)
      continue
    }
    sorted.ready.push(event)
  }
  return sorted
}

/** The events whose block is still canonical now, at confirmation time (the reorg check). */
async function canonicalEvents(
  events: OperatorEvent[],
  head: HeadRef,
  reader: ChainReader,
): Promise<Set<OperatorEvent>> {
  const numbers = [...new Set(events.map((event) => event.blockNumber))]
  const hashes = new Map(
    await Promise.all(
      numbers.map(async (number) => [number, await reader.canonicalHash(head, number)] as const),
    ),
  )
  return new Set(events.filter((event) => hashes.get(event.blockNumber) === event.blockHash))
}
