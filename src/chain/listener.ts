import type { ChainableCommander, Redis } from 'ioredis'
import { getAddress, type Log } from 'ethers'
import {
  CANCEL_ORACLE_REQUEST_TOPIC,
  ORACLE_REQUEST_TOPIC,
  decodeOperatorLog,
  type CancelRequestEvent,
  type OracleRequestEvent,
} from './operator.ts'
import { wakeableSleep } from './wakeable-sleep.ts'
import {
  connectProvider,
  HeadTrackingWebSocketProvider,
  isWebSocketProvider,
  type ChainProvider,
  type HeadHeader,
} from './provider.ts'

/** What the listener needs to know about one loaded job, by spec id. */
export interface SpecFilter {
  /** The job's `minIncomingConfirmations`; values below 1 count as 1. */
  minConfirmations: number
}

export interface RequestListenerOptions {
  /** An ethers provider (HTTP or WebSocket), or `rpcUrl` to make one. */
  provider?: ChainProvider
  rpcUrl?: string
  chainId?: number
  /** Operator contracts whose logs are read. */
  operators: readonly string[]
  /** Spec ids (lowercase 0x hex, either externalJobID encoding) of the loaded jobs. */
  specIds: ReadonlyMap<string, SpecFilter>
  redis: Redis
  /** Key prefix in Redis; the checkpoint and the consumed markers live under it. */
  prefix: string
  /** Distinguishes listeners that share a prefix but watch different things. */
  name?: string
  /** Called once per confirmed request (again only if it threw). The log is marked consumed after it resolves. */
  onRequest: (event: OracleRequestEvent) => Promise<void> | void
  onCancel?: (event: CancelRequestEvent) => Promise<void> | void
  onError?: (error: Error) => void
  /** Milliseconds between head polls (WebSocket providers are also woken by new heads). */
  pollIntervalMs?: number
  /** First block to read when no checkpoint is stored; default: the current head (only new requests). */
  fromBlock?: number
  /** Widest `eth_getLogs` block range. */
  maxBlockRange?: number
  /** How far back to rescan when the checkpoint's block was reorged away. */
  rewindDepth?: number
  /** How long a consumed marker is kept; it only needs to outlive any rescan of its block. */
  consumedTtlSeconds?: number
}

export interface ListenerStats {
  /** Logs seen but still waiting for confirmations. */
  pending: number
  delivered: number
  /** Logs skipped because their block was no longer canonical at confirmation time. */
  droppedByReorg: number
  /** Requests not delivered because a cancel for them was seen first. */
  cancelledBeforeDelivery: number
  skippedAsConsumed: number
}

export interface RequestListener {
  start(): Promise<void>
  stop(): Promise<void>
  /** Replaces the set of jobs (after a reload of `jobs/`). */
  setSpecIds(specIds: ReadonlyMap<string, SpecFilter>): void
  /** Runs one scan now (also what the poll loop runs). */
  poll(): Promise<void>
  /** Resolves once the logs up to `blockNumber` have been read (delivered if they were confirmed). */
  whenScanned(blockNumber: number, timeoutMs?: number): Promise<void>
  /** Last block whose logs are all settled (delivered, dropped or not ours); undefined before start. */
  readonly checkpoint: number | undefined
  readonly stats: Readonly<ListenerStats>
}

/** The head a scan works from; its own and its parent's hash answer most canonical-hash questions. */
type HeadRef = HeadHeader

/**
 * The canonical hash at `number` when the head already tells it (the head or its parent), or the
 * `newHeads` notifications link down to it, so a scan asks the node for no block but the head, even
 * one that fell several blocks behind.
 */
function knownCanonicalHash(
  head: HeadRef,
  number: number,
  provider: ChainProvider | undefined,
): string | undefined {
  if (number === head.number) return head.hash
  if (number === head.number - 1) return head.parentHash
  return provider instanceof HeadTrackingWebSocketProvider
    ? provider.canonicalHashFromHeaders(head, number)
    : undefined
}

interface Checkpoint {
  number: number
  hash: string | null
}

type OperatorEvent = OracleRequestEvent | CancelRequestEvent

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
  const pollIntervalMs = options.pollIntervalMs ?? 1_000
  const maxBlockRange = options.maxBlockRange ?? 1_000
  const maxBlocksPerScan = maxBlockRange * 10
  const rewindDepth = options.rewindDepth ?? 64
  const consumedTtlSeconds = options.consumedTtlSeconds ?? 7 * 24 * 3600
  const operators = options.operators.map((address) => getAddress(address))
  if (operators.length === 0)
    throw new Error('createRequestListener: at least one operator address is required')
  let specIds = normalizeSpecIds(options.specIds)

  let provider: ChainProvider | undefined = options.provider
  const ownsProvider = provider === undefined
  let chainId = options.chainId
  let checkpoint: Checkpoint | undefined
  let checkpointStored = false
  let scannedHead = -1
  /** The highest head a scan has worked from. */
  let lastHeadNumber = -1
  let running = false
  let loop: Promise<void> | undefined
  // A new head, or a scan that stopped short of the head, starts the next scan at once.
  const pause = wakeableSleep()
  let scanning: Promise<void> | undefined
  const scanWaiters = new Set<{ blockNumber: number; resolve: () => void }>()
  const stats: ListenerStats = {
    pending: 0,
    delivered: 0,
    droppedByReorg: 0,
    cancelledBeforeDelivery: 0,
    skippedAsConsumed: 0,
  }

  const keyBase = () => `${options.prefix}:listener:${chainId}`
  const checkpointKey = () => `${keyBase()}:${name}:checkpoint`
  const consumedKey = (event: OperatorEvent) =>
    `${keyBase()}:consumed:${event.blockHash.toLowerCase()}:${event.logIndex}`

  async function chain(): Promise<ChainProvider> {
    if (!provider) {
      if (!options.rpcUrl) throw new Error('createRequestListener: give a provider or an rpcUrl')
      provider = await connectProvider(options.rpcUrl, {
        chainId: options.chainId,
        pollingIntervalMs: pollIntervalMs,
      })
    }
    if (chainId === undefined) chainId = Number((await provider.getNetwork()).chainId)
    return provider
  }

  async function blockHash(number: number): Promise<string | null> {
    const block = await (await chain()).getBlock(number)
    return block?.hash ?? null
  }

  async function loadCheckpoint(head: number): Promise<Checkpoint> {
    const stored = await options.redis.get(checkpointKey())
    if (stored) {
      checkpointStored = true
      return JSON.parse(stored) as Checkpoint
    }
    const start = options.fromBlock ?? head + 1
    const number = Math.min(start, head + 1) - 1
    return { number, hash: number >= 0 ? await blockHash(number) : null }
  }

  /** Moves the checkpoint back when its block is no longer on the chain (a reorg or a reset chain). */
  async function checkForReorg(head: HeadRef): Promise<void> {
    const current = checkpoint as Checkpoint
    if (current.number < 0) return
    const canonical =
      knownCanonicalHash(head, current.number, provider) ??
      (current.number < head.number ? await blockHash(current.number) : null)
    if (canonical !== null && canonical === current.hash) return
    const number = Math.max(-1, Math.min(current.number, head.number) - rewindDepth)
    checkpoint = { number, hash: number >= 0 ? await blockHash(number) : null }
  }

  async function readLogs(from: number, to: number): Promise<Log[]> {
    const logs: Log[] = []
    for (let start = from; start <= to; start += maxBlockRange) {
      const end = Math.min(to, start + maxBlockRange - 1)
      logs.push(
        ...(await (
          await chain()
        ).getLogs({
          address: operators,
          topics: [[ORACLE_REQUEST_TOPIC, CANCEL_ORACLE_REQUEST_TOPIC]],
          fromBlock: start,
          toBlock: end,
        })),
      )
    }
    return logs
      .filter((log) => !log.removed)
      .sort((a, b) => a.blockNumber - b.blockNumber || a.index - b.index)
  }

  function confirmationsFor(event: OperatorEvent): number {
    if (event.kind === 'request')
      return Math.max(1, specIds.get(event.specId)?.minConfirmations ?? 1)
    // A cancel carries no spec id: it waits as long as the most careful job.
    return Math.max(1, ...[...specIds.values()].map((filter) => filter.minConfirmations))
  }

  /**
   * The chain's head: the one the last `newHeads` notification carried when it is newer than the head
   * of the previous scan (the scan it woke), else the node's answer for `latest`.
   */
  async function currentHead(): Promise<HeadRef | undefined> {
    const connected = await chain()
    const notified =
      connected instanceof HeadTrackingWebSocketProvider ? connected.lastHead : undefined
    if (notified && notified.number > lastHeadNumber) return notified
    const block = await connected.getBlock('latest')
    return block?.hash
      ? { number: block.number, hash: block.hash, parentHash: block.parentHash }
      : undefined
  }

  async function scan(): Promise<void> {
    const head = await currentHead()
    if (!head) return
    lastHeadNumber = Math.max(lastHeadNumber, head.number)
    checkpoint ??= await loadCheckpoint(head.number)
    await checkForReorg(head)
    const from = checkpoint.number + 1
    // A long backfill goes in slices, each saved as it completes; the loop goes on at once.
    const to = Math.min(head.number, from + maxBlocksPerScan - 1)
    if (to < head.number) pause.wake()
    let holdBackFrom = Number.POSITIVE_INFINITY
    let pending = 0
    // The consumed markers of this scan and its checkpoint leave in one write, markers first: a
    // checkpoint never passes a log whose marker is not stored.
    const writes = options.redis.pipeline()

    if (from <= to) {
      const events = (await readLogs(from, to))
        .map((log) => decodeOperatorLog(log, chainId as number))
        .filter(
          (event): event is OperatorEvent =>
            event !== undefined && (event.kind === 'cancel' || specIds.has(event.specId)),
        )
      const cancels = new Map(
        events.filter((event) => event.kind === 'cancel').map((event) => [event.requestId, event]),
      )

      const ready: OperatorEvent[] = []
      for (const event of events) {
        const confirmed = head.number >= event.blockNumber + confirmationsFor(event) - 1
        if (!confirmed) {
          pending += 1
          holdBackFrom = Math.min(holdBackFrom, event.blockNumber)
          continue
        }
        const cancel = event.kind === 'request' ? cancels.get(event.requestId) : undefined
        if (cancel) {
          // Cancelled before it was delivered: nothing to do once the cancel itself is final.
          if (head.number >= cancel.blockNumber + confirmationsFor(cancel) - 1)
            stats.cancelledBeforeDelivery += 1
          else holdBackFrom = Math.min(holdBackFrom, event.blockNumber)
          continue
        }
        ready.push(event)
      }

      const canonical = await canonicalEvents(ready, head)
      for (const event of ready) {
        if (!canonical.has(event)) {
          stats.droppedByReorg += 1
          // The chain moved under us between the log read and now: read this range again next time.
          holdBackFrom = Math.min(holdBackFrom, event.blockNumber)
        }
      }
      const failedAt = await deliver(
        ready.filter((event) => canonical.has(event)),
        writes,
      )
      holdBackFrom = Math.min(holdBackFrom, failedAt)
    }

    try {
      stats.pending = pending
      const number = Math.min(to, holdBackFrom - 1)
      if (number !== checkpoint.number || !checkpointStored) {
        const hash =
          number >= 0
            ? (knownCanonicalHash(head, number, provider) ?? (await blockHash(number)))
            : null
        checkpoint = { number, hash }
        writes.set(checkpointKey(), JSON.stringify(checkpoint))
        checkpointStored = true
      }
    } finally {
      // The markers leave even when the checkpoint's block could not be read: what was delivered stays consumed.
      await execAll(writes)
    }
    scannedHead = Math.max(scannedHead, to)
    for (const waiter of scanWaiters) {
      if (scannedHead >= waiter.blockNumber) {
        scanWaiters.delete(waiter)
        waiter.resolve()
      }
    }
  }

  /** The events whose block is still canonical now, at confirmation time. */
  async function canonicalEvents(
    events: OperatorEvent[],
    head: HeadRef,
  ): Promise<Set<OperatorEvent>> {
    const numbers = [...new Set(events.map((event) => event.blockNumber))]
    const hashes = new Map(
      await Promise.all(
        numbers.map(
          async (number) =>
            [
              number,
              knownCanonicalHash(head, number, provider) ?? (await blockHash(number)),
            ] as const,
        ),
      ),
    )
    return new Set(events.filter((event) => hashes.get(event.blockNumber) === event.blockHash))
  }

  /**
   * Hands unconsumed events to their handlers and adds a consumed marker for each one handled to
   * `marks`; returns the lowest block of a failed one (or Infinity).
   */
  async function deliver(events: OperatorEvent[], marks: ChainableCommander): Promise<number> {
    if (events.length === 0) return Number.POSITIVE_INFINITY
    const consumed = await options.redis.mget(...events.map(consumedKey))
    const fresh = events.filter((event, index) => {
      if (consumed[index] === null) return true
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
        marks.set(consumedKey(event), '1', 'EX', consumedTtlSeconds)
        stats.delivered += 1
      } else {
        failedAt = Math.min(failedAt, event.blockNumber)
        reportError(
          new Error(
            `handler failed for ${event.kind} ${event.requestId} (block ${event.blockNumber}): ${errorMessage(outcome.reason)}`,
          ),
        )
      }
    })
    return failedAt
  }

  function reportError(error: Error): void {
    if (options.onError) options.onError(error)
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
      } catch (error) {
        reportError(error instanceof Error ? error : new Error(String(error)))
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
      const connected = await chain()
      running = true
      if (isWebSocketProvider(connected)) await connected.on('block', onBlock)
      loop = runLoop()
    },
    async stop() {
      running = false
      pause.wake()
      await loop
      while (scanning) await scanning.catch(() => undefined)
      // Destroying a provider we made ends its subscription too; unsubscribing first races the destroy.
      if (ownsProvider) provider?.destroy()
      else if (provider && isWebSocketProvider(provider)) await provider.off('block', onBlock)
      for (const waiter of scanWaiters) waiter.resolve()
      scanWaiters.clear()
    },
    setSpecIds(next) {
      specIds = normalizeSpecIds(next)
    },
    poll,
    whenScanned(blockNumber, timeoutMs = 10_000) {
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
          scanWaiters.delete(waiter)
          rejectScan(
            new Error(
              `listener did not scan block ${blockNumber} within ${timeoutMs} ms (scanned ${scannedHead})`,
            ),
          )
        }, timeoutMs)
        scanWaiters.add(waiter)
      })
    },
    get checkpoint() {
      return checkpoint?.number
    },
    get stats() {
      return stats
    },
  }
}

const HANDLER_CONCURRENCY = 256

/** Sends a pipeline (if it holds anything) and throws the first command error it met. */
async function execAll(pipeline: ChainableCommander): Promise<void> {
  if (pipeline.length === 0) return
  const failed = (await pipeline.exec())?.find(([error]) => error !== null)
  if (failed) throw failed[0] as Error
}

function normalizeSpecIds(specIds: ReadonlyMap<string, SpecFilter>): Map<string, SpecFilter> {
  return new Map([...specIds].map(([specId, filter]) => [specId.toLowerCase(), filter]))
}

function errorMessage(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason)
}
