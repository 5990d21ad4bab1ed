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
  return new OperatorLogListener(options)
}

/** The listener's parts: what it reads with, where it stands, how it delivers; and its poll loop. */
class OperatorLogListener implements RequestListener {
  readonly stats = zeroStats()
  private readonly pollIntervalMs: number
  private readonly maxBlockRange: number
  // A runner whose jobs folder names no Operator yet still follows the chain: a spec added later
  // brings one (setOperators).
  private operators: string[]
  private specIds: Map<string, SpecFilter>
  private readonly reader: ChainReader
  private readonly gate: ReturnType<typeof createLogGate>
  private readonly keeper: CheckpointKeeper
  private readonly delivery: DeliveryOptions
  private readonly stalls: StallReport
  /** A new head, or a scan that stopped short of the head, starts the next scan at once. */
  private readonly pause = wakeableSleep()
  private readonly scanned = scanWaiters()
  private running = false
  private loop: Promise<void> | undefined
  private scanning: Promise<void> | undefined

  constructor(options: RequestListenerOptions) {
    const name = options.name ?? 'default'
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_SETTINGS.CHAIN_POLL_INTERVAL_MS
    this.maxBlockRange = options.maxBlockRange ?? 1_000
    this.operators = normalizeOperators(options.operators)
    this.specIds = normalizeSpecIds(options.specIds)
    const operators = () => this.operators
    const reader = createChainReader({
      ...options,
      operators,
      pollIntervalMs: this.pollIntervalMs,
      maxBlockRange: this.maxBlockRange,
    })
    this.reader = reader
    this.gate = createLogGate({ reader, operators, log: options.log })
    const keyBase = () => `${options.prefix}:listener:${reader.chainId}`
    this.keeper = new CheckpointKeeper(
      options.redis,
      () => `${keyBase()}:${name}:checkpoint`,
      reader,
      options.fromBlock,
      options.rewindDepth ?? 64,
      () => void (this.stats.reorgs += 1),
    )
    this.delivery = deliveryOptions(options, this.stats, keyBase)
    this.stalls = stallReport(options, reader)
  }

  /** The `newHeads` handler: its identity is kept, so stop() can take it off again. */
  private readonly onBlock = (): void => this.pause.wake()

  get checkpoint(): number | undefined {
    return this.keeper.current?.number
  }

  async start(): Promise<void> {
    if (this.running) return
    const connected = await this.reader.provider()
    this.running = true
    if (isWebSocketProvider(connected)) await connected.on('block', this.onBlock)
    this.loop = this.runLoop()
  }

  async stop(): Promise<void> {
    this.running = false
    this.pause.wake()
    await this.loop
    while (this.scanning) await this.scanning.catch(() => undefined)
    // The next start reads again only what this one had not read.
    await this.keeper.flush().catch(this.delivery.reportError)
    await releaseProvider(this.reader, this.onBlock)
    this.scanned.releaseAll()
  }

  setSpecIds(next: ReadonlyMap<string, SpecFilter>): void {
    this.specIds = normalizeSpecIds(next)
  }

  setOperators(next: readonly string[]): void {
    this.operators = normalizeOperators(next)
  }

  async poll(): Promise<void> {
    // One scan at a time: a caller's poll() joins the one in progress, then runs its own.
    while (this.scanning) await this.scanning.catch(() => undefined)
    this.scanning = this.scan()
    try {
      await this.scanning
    } finally {
      this.scanning = undefined
    }
  }

  wake(): void {
    this.onBlock()
  }

  async rewind(blockNumber: number): Promise<void> {
    this.keeper.requestRewind(blockNumber)
    this.pause.wake()
  }

  whenScanned(blockNumber: number, timeoutMs?: number): Promise<void> {
    return this.scanned.whenScanned(blockNumber, timeoutMs)
  }

  private async scan(): Promise<void> {
    const to = await scanOnce({
      reader: this.reader,
      gate: this.gate,
      checkpoint: this.keeper,
      delivery: this.delivery,
      stats: this.stats,
      specIds: () => this.specIds,
      maxBlocksPerScan: this.maxBlockRange * 10,
      moreToScan: () => this.pause.wake(),
    })
    if (to !== undefined) this.scanned.reached(to)
  }

  private async runLoop(): Promise<void> {
    while (this.running) {
      try {
        await this.poll()
        this.stalls.scanned()
      } catch (error) {
        if (error instanceof BlocksNotThereYet) this.stalls.failed(error)
        this.delivery.reportError(error)
      }
      if (!this.running) break
      // A head that arrived during the scan is not lost: the next scan starts at once.
      await this.pause.sleep(this.pollIntervalMs)
    }
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
