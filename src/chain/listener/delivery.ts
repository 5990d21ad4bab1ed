import type { ChainableCommander, Redis } from 'ioredis'
import { withContext } from '../../config/errors.ts'
import type { CancelRequestEvent, OracleRequestEvent } from '../operator.ts'
import type { ListenerStats, OperatorEvent } from './types.ts'

const HANDLER_CONCURRENCY = 256

export interface DeliveryOptions {
  redis: Redis
  /** The consumed marker's key of an event. */
  consumedKey: (event: OperatorEvent) => string
  consumedTtlSeconds: number
  /** The key whose value tags the markers (RequestListenerOptions.consumedTagKey). */
  consumedTagKey?: string
  onRequest: (event: OracleRequestEvent) => Promise<void> | void
  onCancel?: (event: CancelRequestEvent) => Promise<void> | void
  stats: ListenerStats
  /** Told of what went wrong (a thrown value that is not an Error is made one). */
  reportError: (error: unknown) => void
}

/**
 * Hands unconsumed events to their handlers and adds a consumed marker for each one handled to
 * `marks`; returns the lowest block of a failed one (or Infinity).
 */
export async function deliver(
  events: OperatorEvent[],
  marks: ChainableCommander,
  options: DeliveryOptions,
): Promise<number> {
  if (events.length === 0) return Number.POSITIVE_INFINITY
  const { stats } = options
  const { tag, consumed } = await readMarkers(events, options)
  const fresh = events.filter((event, index) => {
    if (tag === null || consumed[index] !== tag) return true
    stats.skippedAsConsumed += 1
    return false
  })
  const outcomes: PromiseSettledResult<void>[] = []
  // Handlers run concurrently, a bounded number at a time (a backfill can hold thousands of logs).
  for (let start = 0; start < fresh.length; start += HANDLER_CONCURRENCY) {
    outcomes.push(
      ...(await Promise.allSettled(
        fresh.slice(start, start + HANDLER_CONCURRENCY).map(async (event) => {
          if (event.kind === 'request') await options.onRequest(event)
          else await options.onCancel?.(event)
        }),
      )),
    )
  }
  let failedAt = Number.POSITIVE_INFINITY
  outcomes.forEach((outcome, index) => {
    const event = fresh[index] as OperatorEvent
    if (outcome.status === 'fulfilled') {
      // With no tag (Redis lost it: the handler's writes may have gone too), no marker: the
      // rebuild reads the chain again and the handler decides what is still open.
      if (tag !== null) marks.set(options.consumedKey(event), tag, 'EX', options.consumedTtlSeconds)
      stats.delivered += 1
    } else {
      failedAt = Math.min(failedAt, event.blockNumber)
      // The handler's error stays the cause, with its kind: a Redis that refused the job (full,
      // read-only) is Redis's outage, not an error line per scan (seen: 3,208 lines in 20 s).
      options.reportError(
        withContext(
          `handler failed for ${event.kind} ${event.requestId} (block ${event.blockNumber})`,
          outcome.reason,
        ),
      )
    }
  })
  return failedAt
}

/**
 * The events' consumed markers and the tag a marker must carry to count, read in one command: the
 * tag key's value, or `1` where markers are not tagged.
 */
async function readMarkers(
  events: readonly OperatorEvent[],
  options: DeliveryOptions,
): Promise<{ tag: string | null; consumed: (string | null)[] }> {
  const markers = events.map(options.consumedKey)
  if (!options.consumedTagKey) return { tag: '1', consumed: await options.redis.mget(...markers) }
  const [tag = null, ...consumed] = await options.redis.mget(options.consumedTagKey, ...markers)
  return { tag, consumed }
}

/** Sends a pipeline (if it holds anything) and throws the first command error it met. */
export async function execAll(pipeline: ChainableCommander): Promise<void> {
  if (pipeline.length === 0) return
  const failed = (await pipeline.exec())?.find(([error]) => error !== null)
  if (failed) throw failed[0] as Error
}
