import type { Counter } from 'prom-client'
import { counter, gauge, histogram } from './registry.ts'

/**
 * Every feedrunner metric, defined in this one file. Labels are bounded by construction: job names
 * come from the loaded specs, task types from the pipeline's fixed set, families from the catalog,
 * reasons and statuses from the fixed classes in reasons.ts, sender keys by their index in
 * NODE_PRIVATE_KEYS ("0", "1", ...), chains by their chain id (the configured ones only). Never a
 * request id, an address, a URL or a key.
 */

export const REQUEST_STATES = ['received', 'refused', 'fulfilled', 'errored', 'cancelled'] as const
export type RequestMetricState = (typeof REQUEST_STATES)[number]

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300]
/** A scrape must not hang on a Redis or RPC node that does not answer. */
const SCRAPE_TIMEOUT_MS = 1_000

/** Structural view of a sender key's counters (src/chain/sender/types.ts KeyStats, minus the address). */
export interface KeyStatsLike {
  nextNonce: number
  pending: number
  /** Whether this process owns the key now (one process at a time does). */
  owned: boolean
  sent: number
  bumped: number
  reverted: number
  filled: number
  resent: number
  leasesLost: number
  reorgedOut: number
  held: number
  noncesTaken: number
}

/** `{chain}` for a runner's metric, nothing for a process-wide one. */
export function chainLabel(chain: string | undefined): { chain?: string } {
  return chain === undefined ? {} : { chain }
}

export interface ListenerSource {
  /** The chain id it listens on, as a label. */
  chain?: string
  /** Last block whose logs are settled; undefined before the first scan. */
  checkpoint(): number | undefined
  /** Logs seen and waiting for confirmations. */
  pending(): number
  /** The node's current head. */
  head(): Promise<number>
}

interface SenderSource {
  chain?: string
  stats: () => readonly KeyStatsLike[]
  /** Each key's balance in wei, read from the node at scrape time. */
  balances?: () => Promise<readonly bigint[]>
  /** What each counter of each key was at the previous scrape (a counter moves by the difference). */
  last: Map<string, number>
}

/** Redis's clock as the process reads it (src/queue/redis-clock.ts); undefined before a first reading. */
export interface SharedClock {
  now(): number | undefined
}

/**
 * Sources read at scrape time. Kept on globalThis so a module loaded twice in one process (test
 * isolation) still feeds the metrics registered the first time.
 */
interface ScrapeSources {
  senders: Set<SenderSource>
  listeners: Set<ListenerSource>
  fetchLimits: Set<FetchLimitSource>
}

/** A fetch worker's concurrency now (src/queue/fetch-concurrency.ts), by family. */
interface FetchLimitSource {
  family: string
  limit: () => number
}
const SOURCES_KEY = Symbol.for('feedrunner.metrics.sources')
const holder = globalThis as typeof globalThis & { [SOURCES_KEY]?: ScrapeSources }
const sources: ScrapeSources = (holder[SOURCES_KEY] ??= {
  senders: new Set(),
  listeners: new Set(),
  fetchLimits: new Set(),
})

/** A scrape-time read that gives up after SCRAPE_TIMEOUT_MS. */
export function withTimeout<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no answer in time')), SCRAPE_TIMEOUT_MS)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** A job name as a label: the spec's name, bounded in length (names come from JOBS_DIR only). */
export function jobLabel(job: string | undefined): string {
  return (job ?? '(unknown)').slice(0, 64)
}

export const requestsTotal = counter(
  'feedrunner_requests_total',
  'Runs by job, by what started them (trigger: request, tick, call), by what became of them (received, refused, fulfilled, errored, cancelled) and a reason class',
  ['job', 'state', 'reason', 'trigger'],
)

export const replaysTotal = counter(
  'feedrunner_replays_total',
  'Errored runs replayed with `feedrunner runs replay`, by job and the state the replay ended in',
  ['job', 'state'],
)

export const runDuration = histogram(
  'feedrunner_run_duration_seconds',
  "Time from a run's start to its final state (the whole pipeline, fulfilment included), by job, final state and trigger (request, tick, call)",
  ['job', 'state', 'trigger'],
  RUN_BUCKETS,
)

export const taskDuration = histogram(
  'feedrunner_task_duration_seconds',
  'Pipeline task durations by job, task type and outcome (ok, error)',
  ['job', 'task_type', 'outcome'],
  DURATION_BUCKETS,
)

export const fetchDuration = histogram(
  'feedrunner_fetch_duration_seconds',
  'Feed service call latency as a fetch worker sees it, by family and status (HTTP status, or no_answer / invalid_response / internal)',
  ['family', 'status'],
  DURATION_BUCKETS,
)

export const fetchErrors = counter(
  'feedrunner_fetch_errors_total',
  'Failed feed service calls (each attempt) by family and status',
  ['family', 'status'],
)

export const adapterRequests = counter(
  'feedrunner_adapter_requests_total',
  'Requests the adapter answered, by endpoint (catalog names, else "unknown") and HTTP status',
  ['endpoint', 'status'],
)

export const adapterDuration = histogram(
  'feedrunner_adapter_request_duration_seconds',
  'Time the adapter took to answer, by endpoint',
  ['endpoint'],
  DURATION_BUCKETS,
)

export const queueWait = histogram(
  'feedrunner_queue_wait_seconds',
  "Time a job waited in its queue before a worker took it (from enqueue to the start of the attempt, by Redis's clock), by queue and, for a runner's queue, chain",
  ['queue', 'chain'],
  WAIT_BUCKETS,
)

export const lostLocks = counter(
  'feedrunner_queue_lost_locks_total',
  "Times a worker found a job's lock lapsed (a renewal failed, or settling the job found the lock gone or another's); BullMQ's stalled-job check runs the job again. By BullMQ queue name",
  ['queue'],
)

function senderCounter(
  name: string,
  help: string,
  field: Exclude<keyof KeyStatsLike, 'nextNonce' | 'pending' | 'owned'>,
): Counter {
  return counter(name, help, ['key', 'chain'], function collectSender() {
    for (const source of sources.senders) {
      source.stats().forEach((stats, index) => {
        const seen = `${field}:${index}`
        const previous = source.last.get(seen) ?? 0
        const labels = { key: String(index), ...chainLabel(source.chain) }
        this.inc(labels, Math.max(0, stats[field] - previous))
        source.last.set(seen, Math.max(previous, stats[field]))
      })
    }
  })
}

senderCounter(
  'feedrunner_tx_sent_total',
  'Fulfilment transactions broadcast, by sender key index',
  'sent',
)
senderCounter(
  'feedrunner_tx_bumped_total',
  'Transactions re-sent with higher fees (same nonce), by sender key index',
  'bumped',
)
senderCounter(
  'feedrunner_tx_reverted_total',
  'Transactions that reverted (in simulation or on chain), by sender key index',
  'reverted',
)
senderCounter(
  'feedrunner_tx_filled_total',
  'Nonces spent on a filler transaction because the transaction holding them could never be mined (refused for good by the node), by sender key index',
  'filled',
)
senderCounter(
  'feedrunner_tx_resent_total',
  'Transactions sent again unchanged because the key had mined nothing for a while (a node that lost them), by sender key index',
  'resent',
)
senderCounter(
  'feedrunner_tx_reorged_out_total',
  'Mined transactions a reorg took away, sent again the same bytes (watched until CHAIN_FINALITY_DEPTH deep), by sender key index',
  'reorgedOut',
)
senderCounter(
  'feedrunner_tx_held_total',
  'Looks at which a transaction signed earlier was kept back because the request it answers was not on chain (a reorg took it away), by sender key index',
  'held',
)
senderCounter(
  'feedrunner_tx_nonce_taken_total',
  'Nonces of the key spent by a transaction this installation did not record (the key used by another program), their jobs sent again, by sender key index',
  'noncesTaken',
)

senderCounter(
  'feedrunner_tx_key_leases_lost_total',
  'Sender key leases this process lost (not renewed in time, or Redis lost them): the key went to another process with its transactions, by sender key index',
  'leasesLost',
)

gauge(
  'feedrunner_tx_key_owned',
  'Whether this process owns each sender key now (1) or another process does (0), by key index and chain',
  ['key', 'chain'],
  function collectOwned() {
    this.reset()
    for (const source of sources.senders)
      source
        .stats()
        .forEach((stats, index) =>
          this.set({ key: String(index), ...chainLabel(source.chain) }, stats.owned ? 1 : 0),
        )
  },
)

gauge(
  'feedrunner_tx_next_nonce',
  'Next nonce each sender key will sign with, by key index and chain',
  ['key', 'chain'],
  function collectNonce() {
    this.reset()
    for (const source of sources.senders)
      source
        .stats()
        .forEach((stats, index) =>
          this.set({ key: String(index), ...chainLabel(source.chain) }, stats.nextNonce),
        )
  },
)

gauge(
  'feedrunner_tx_in_flight',
  'Transactions sent and not yet final, by sender key index and chain',
  ['key', 'chain'],
  function collectInFlight() {
    this.reset()
    for (const source of sources.senders)
      source
        .stats()
        .forEach((stats, index) =>
          this.set({ key: String(index), ...chainLabel(source.chain) }, stats.pending),
        )
  },
)

gauge(
  'feedrunner_tx_key_balance_eth',
  "Balance of each sender key in ether (it pays the fulfilments' gas), by key index and chain",
  ['key', 'chain'],
  async function collectBalances() {
    this.reset()
    for (const source of sources.senders) {
      try {
        const balances = source.balances ? await withTimeout(source.balances()) : []
        // Whole gwei: a float of ether holds them exactly up to millions of ether.
        balances.forEach((wei, index) =>
          this.set(
            { key: String(index), ...chainLabel(source.chain) },
            Number(wei / 10n ** 9n) / 1e9,
          ),
        )
      } catch {
        // RPC node away: no value (readiness says why).
      }
    }
  },
)

gauge(
  'feedrunner_listener_lag_blocks',
  "Blocks between the node's head and the listener's checkpoint (confirmation depth included), by chain",
  ['chain'],
  async function collectLag() {
    this.reset()
    for (const listener of sources.listeners) {
      const checkpoint = listener.checkpoint()
      if (checkpoint === undefined) continue
      try {
        const behind = Math.max(0, (await withTimeout(listener.head())) - checkpoint)
        this.set(chainLabel(listener.chain), behind)
      } catch {
        // RPC node away: no value (readiness says why).
      }
    }
  },
)

gauge(
  'feedrunner_listener_pending_logs',
  'OracleRequest logs seen and waiting for their confirmations, by chain',
  ['chain'],
  function collectPending() {
    this.reset()
    // A process without a listener says 0, unlabelled, as before there were chains.
    if (sources.listeners.size === 0) this.set(0)
    for (const listener of sources.listeners)
      this.set(chainLabel(listener.chain), listener.pending())
  },
)

gauge(
  'feedrunner_fetch_concurrency',
  "Fetches a family's worker runs at once now, as its fetches' times set it (FETCH_WORKER_MIN_CONCURRENCY to FETCH_WORKER_CONCURRENCY), by family",
  ['family'],
  function collectFetchLimits() {
    this.reset()
    for (const { family, limit } of sources.fetchLimits) this.set({ family }, limit())
  },
)

// ---- what the running parts call to be read at scrape time (observe.ts records the rest) ----

/** Reads a transaction sender's per-key counters at every scrape until the returned function is called. */
export function watchSender(
  stats: () => readonly KeyStatsLike[],
  balances?: () => Promise<readonly bigint[]>,
  chain?: string,
): () => void {
  const source: SenderSource = { chain, stats, balances, last: new Map() }
  sources.senders.add(source)
  return () => void sources.senders.delete(source)
}

export function watchListener(listener: ListenerSource): () => void {
  sources.listeners.add(listener)
  return () => void sources.listeners.delete(listener)
}

/** Reads a fetch worker's concurrency at every scrape until the returned function is called. */
export function watchFetchConcurrency(family: string, limit: () => number): () => void {
  const source: FetchLimitSource = { family, limit }
  sources.fetchLimits.add(source)
  return () => void sources.fetchLimits.delete(source)
}
