import { getAddress } from 'ethers'
import { DEFAULT_SETTINGS } from '../../config/settings.ts'
import { isWebSocketProvider } from '../provider.ts'
import { wakeableSleep } from '../wakeable-sleep.ts'
import { BlocksNotThereYet, createChainReader, type ChainReader } from './chain-reader.ts'
import { CheckpointKeeper } from './checkpoint.ts'
import type { DeliveryOptions } from './delivery.ts'
import { createLogGate } from './log-gate.ts'
import { scanOnce } from './scan.ts'
import { createStallReport, type StallReport } from './stall-report.ts'
import type {
  ListenerStats,
  OperatorEvent,
  RequestListener,
  RequestListenerOptions,
  SpecFilter,
} from './types.ts'

export type { ListenerStats, RequestListener, RequestListenerOptions, SpecFilter } from './types.ts'

/**
 * Watches Operator contracts for `OracleRequest` and `CancelOracleRequest` logs and delivers each
 * one exactly once to its handler after enough confirmations.
 *
 * Every scan reads the logs from the checkpoint + 1 to the head. Logs that are not confirmed yet hold
 * the checkpoint back, so the next scan reads them again from the chain as it is then: a log whose
 * block was reorged away simply no longer appears, and a request re-included elsewhere appears with
 * its new block. Before delivery the block hash is checked once more against the canonical chain. A
 * consumed marker per (block hash, log index) in Redis, written after the handler resolved, keeps a
 * restart or a rescan from delivering a log twice; the checkpoint (number and hash) in Redis tells a
 * restarted listener where to backfill from.
 */
export function createRequestListener(options: RequestListenerOptions): RequestListener {
  const name = options.name ?? 'default'
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_SETTINGS.CHAIN_POLL_INTERVAL_MS
  const maxBlockRange = options.maxBlockRange ?? 1_000
  // A runner whose jobs folder names no Operator yet still follows the chain: a spec added later
  // brings one (setOperators).
  let operators = normalizeOperators(options.operators)
  let specIds = normalizeSpecIds(options.specIds)
  const reader = createChainReader({
    ...options,
    operators: () => operators,
    pollIntervalMs,
    maxBlockRange,
  })
  const gate = createLogGate({ reader, operators: () => operators, log: options.log })
  const stats = zeroStats()
  const keyBase = () => `${options.prefix}:listener:${reader.chainId}`
  const checkpoint = new CheckpointKeeper(
    options.redis,
    () => `${keyBase()}:${name}:checkpoint`,
    reader,
    options.fromBlock,
    options.rewindDepth ?? 64,
    () => void (stats.reorgs += 1),
  )
  const delivery = deliveryOptions(options, stats, keyBase)
  const stalls = stallReport(options, reader)
  // A new head, or a scan that stopped short of the head, starts the next scan at once.
  const pause = wakeableSleep()
  const scanned = scanWaiters()
  let running = false
  let loop: Promise<void> | undefined
  let scanning: Promise<void> | undefined

  async function scan(): Promise<void> {
    const to = await scanOnce({
      reader,
      gate,
      checkpoint,
      delivery,
      stats,
      specIds: () => specIds,
      maxBlocksPerScan: maxBlockRange * 10,
      moreToScan: () => pause.wake(),
    })
    if (to !== undefined) scanned.reached(to)
  }

  async function poll(): Promise<void> {
    // One scan at a time: a caller's poll() joins the one in progress, then runs its own.
    while (scanning) await scanning.catch(() => undefined)
    scanning = scan()
    try {
      await scanning
    } finally {
      scanning = undefined
    }
  }

  async function runLoop(): Promise<void> {
    while (running) {
      try {
        await poll()
        stalls.scanned()
      } catch (error) {
        if (error instanceof BlocksNotThereYet) stalls.failed(error)
        delivery.reportError(error)
      }
      if (!running) break
      // A head that arrived during the scan is not lost: the next scan starts at once.
      await pause.sleep(pollIntervalMs)
    }
  }

  const onBlock = () => pause.wake()

  return {
    async start() {
      if (running) return
      const connected = await reader.provider()
      running = true
      if (isWebSocketProvider(connected)) await connected.on('block', onBlock)
      loop = runLoop()
    },
    async stop() {
      running = false
      pause.wake()
      await loop
      while (scanning) await scanning.catch(() => undefined)
      // The next start reads again only what this one had not read.
      await checkpoint.flush().catch(delivery.reportError)
      await releaseProvider(reader, onBlock)
      scanned.releaseAll()
    },
    setSpecIds(next) {
      specIds = normalizeSpecIds(next)
    },
    setOperators(next) {
      operators = normalizeOperators(next)
    },
    poll,
    wake: onBlock,
    async rewind(blockNumber) {
      checkpoint.requestRewind(blockNumber)
      pause.wake()
    },
    whenScanned: scanned.whenScanned,
    get checkpoint() {
      return checkpoint.current?.number
    },
    get stats() {
      return stats
    },
  }
}

/** How logs are handed over: the handlers, and the consumed markers that keep a log from coming twice. */
function deliveryOptions(
  options: RequestListenerOptions,
  stats: ListenerStats,
  keyBase: () => string,
): DeliveryOptions {
  return {
    redis: options.redis,
    consumedKey: (event: OperatorEvent) =>
      `${keyBase()}:consumed:${event.blockHash.toLowerCase()}:${event.logIndex}`,
    consumedTtlSeconds: options.consumedTtlSeconds ?? 7 * 24 * 3600,
    ...(options.consumedTagKey ? { consumedTagKey: options.consumedTagKey } : {}),
    onRequest: options.onRequest,
    onCancel: options.onCancel,
    stats,
    reportError: (error) =>
      options.onError?.(error instanceof Error ? error : new Error(String(error))),
  }
}

function zeroStats(): ListenerStats {
  return {
    pending: 0,
    delivered: 0,
    droppedByReorg: 0,
    reorgs: 0,
    cancelledBeforeDelivery: 0,
    skippedAsConsumed: 0,
  }
}

/** The listener's stalls, said where its warnings go (none without a log). */
function stallReport(options: RequestListenerOptions, reader: ChainReader): StallReport {
  const log = options.log
  if (!log) return { failed: () => undefined, scanned: () => undefined }
  return createStallReport({
    label: () => options.label ?? `chain ${reader.chainId ?? '(not known yet)'}`,
    log,
    reportEveryMs: options.reportEveryMs ?? DEFAULT_SETTINGS.OUTAGE_REPORT_INTERVAL_MS,
  })
}

/** Destroying a provider we made ends its subscription too; unsubscribing first races the destroy. */
async function releaseProvider(reader: ChainReader, onBlock: () => void): Promise<void> {
  const provider = reader.connected
  if (reader.ownsProvider) provider?.destroy()
  else if (provider && isWebSocketProvider(provider)) await provider.off('block', onBlock)
}

/** The callers waiting for a block to be scanned, and the highest block scanned so far. */
function scanWaiters() {
  let scannedHead = -1
  const waiters = new Set<{ blockNumber: number; resolve: () => void }>()
  return {
    reached(to: number): void {
      scannedHead = Math.max(scannedHead, to)
      for (const waiter of waiters) {
        if (scannedHead >= waiter.blockNumber) {
          waiters.delete(waiter)
          waiter.resolve()
        }
      }
    },
    releaseAll(): void {
      for (const waiter of waiters) waiter.resolve()
      waiters.clear()
    },
    whenScanned(blockNumber: number, timeoutMs = 10_000): Promise<void> {
      if (scannedHead >= blockNumber) return Promise.resolve()
      return new Promise<void>((resolveScan, rejectScan) => {
        const waiter = {
          blockNumber,
          resolve: () => {
            clearTimeout(timer)
            resolveScan()
          },
        }
        const timer = setTimeout(() => {
          waiters.delete(waiter)
          rejectScan(
            new Error(
              `listener did not scan block ${blockNumber} within ${timeoutMs} ms (scanned ${scannedHead})`,
            ),
          )
        }, timeoutMs)
        waiters.add(waiter)
      })
    },
  }
}

function normalizeOperators(addresses: readonly string[]): string[] {
  return [...new Set(addresses.map((address) => getAddress(address)))]
}

function normalizeSpecIds(specIds: ReadonlyMap<string, SpecFilter>): Map<string, SpecFilter> {
  return new Map([...specIds].map(([specId, filter]) => [specId.toLowerCase(), filter]))
}
