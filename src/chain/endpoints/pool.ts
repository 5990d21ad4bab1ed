import type { JsonRpcProvider } from 'ethers'
import type { EndpointConfig } from '../../config/chains.ts'
import type { DependencyHealth } from '../../config/dependency-health.ts'
import { FeedrunnerError } from '../../config/errors.ts'
import { BlockInterval } from '../block-interval.ts'
import { JsonRpcCallError, type RpcCall, type RpcOutcome } from '../sender/json-rpc-batch.ts'
import { RpcEndpoint } from './endpoint.ts'

export type ChainState = 'ok' | 'degraded' | 'down'

export interface EndpointPoolOptions {
  chainId: number
  /** `chain 137 (polygon)`: how messages name the chain. */
  label: string
  endpoints: readonly EndpointConfig[]
  /** The outage reporter of each endpoint (Connections.dependency, so a process has one per endpoint). */
  healthOf: (endpoint: EndpointConfig) => DependencyHealth
  /** How often every endpoint is asked for its head (and an endpoint out of the pool probed). */
  probeIntervalMs: number
  /** An endpoint this many blocks behind the best one is taken out. */
  maxLagBlocks?: number
  /** A read or a broadcast that has no answer within this long fails (and a read goes elsewhere). */
  timeoutMs?: number
  maxResponseBytes?: number
  pollIntervalMs: number
}

/** A probe is a head: it must answer quickly or the endpoint counts as not answering. */
const PROBE_TIMEOUT_MS = 5_000
const DEFAULT_MAX_LAG_BLOCKS = 5
/** Latencies within one step of each other count as equal when choosing where a read goes. */
const LATENCY_STEP_MS = 100

/**
 * A chain's RPC endpoints. Every endpoint is asked for its head every probe interval; one that does not
 * answer, or lags more than `maxLagBlocks` behind the best, is out of the pool until a probe finds it
 * answering and caught up. Reads go to the healthiest endpoint in (least lag, then least latency) and a
 * read that fails for the endpoint's reasons is tried on the next; a signed transaction goes to every
 * endpoint in the pool, send-only ones too. Each endpoint's outage is one line down, one a minute, one
 * back (its DependencyHealth), whatever the number of calls that failed.
 */
export class EndpointPool {
  readonly endpoints: readonly RpcEndpoint[]
  private readonly maxLag: number
  private timer: NodeJS.Timeout | undefined
  private probing: Promise<void> | undefined
  /**
   * The chain's latest block as last read or notified: when it was last told (`at`), when its number
   * was first known (`since`, performance.now()), and whether a notification told it first.
   */
  private latest: { block: unknown; at: number; since: number; notified: boolean } | undefined
  private latestRead: Promise<unknown> | undefined
  /** The chain's pace, from the heads read or notified: no read looks for a block not due yet. */
  private readonly pace = new BlockInterval()

  constructor(private readonly options: EndpointPoolOptions) {
    this.maxLag = options.maxLagBlocks ?? DEFAULT_MAX_LAG_BLOCKS
    this.endpoints = options.endpoints.map(
      (config, index) =>
        new RpcEndpoint({
          config,
          index: index + 1,
          chainId: options.chainId,
          health: options.healthOf(config),
          timeoutMs: options.timeoutMs ?? 30_000,
          maxResponseBytes: options.maxResponseBytes,
          pollIntervalMs: options.pollIntervalMs,
        }),
    )
  }

  get chainId(): number {
    return this.options.chainId
  }

  /** Probes once now (so the first reads know the heads), then every probe interval. */
  async start(): Promise<void> {
    await this.probe()
    this.timer = setInterval(() => void this.probe(), this.options.probeIntervalMs)
    this.timer.unref()
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    await this.probing
    for (const endpoint of this.endpoints) endpoint.close()
  }

  /** ok: every endpoint in the pool; degraded: one left of several; down: no endpoint to read from. */
  state(): ChainState {
    const readers = this.endpoints.filter((endpoint) => !endpoint.sendOnly)
    const up = readers.filter((endpoint) => endpoint.state.up).length
    if (up === 0) return 'down'
    return readers.length > 1 && up === 1 ? 'degraded' : 'ok'
  }

  /**
   * The endpoints reads try, in order: the pool's by lag, then latency (in steps of LATENCY_STEP_MS,
   * so endpoints about as fast keep the configured order: the first listed is preferred), then the
   * ones out of the pool.
   */
  readOrder(): RpcEndpoint[] {
    const readers = this.endpoints.filter((endpoint) => !endpoint.sendOnly)
    const step = (endpoint: RpcEndpoint) => Math.floor(endpoint.state.latencyMs / LATENCY_STEP_MS)
    const rank = (a: RpcEndpoint, b: RpcEndpoint) =>
      a.state.lag - b.state.lag || step(a) - step(b) || a.index - b.index
    return [
      ...readers.filter((endpoint) => endpoint.state.up).sort(rank),
      // A read with every endpoint out still tries them: one may be back before its probe says so.
      ...readers.filter((endpoint) => !endpoint.state.up),
    ]
  }

  /** One raw read (JSON-RPC result as the node sent it), failing over on the endpoint's failures. */
  request<T>(method: string, params: readonly unknown[]): Promise<T> {
    return this.read(method, (endpoint) => endpoint.call<T>(method, params))
  }

  /**
   * The chain's head as a block header (number, hash, parentHash, timestamp, baseFeePerGas; no
   * transaction list promised), read once for every reader of the chain: the listener and the
   * sender's poll loop each look at the head once a poll interval, and a read of
   * `eth_getBlockByNumber('latest', false)` (or a newHeads notification, `noteLatestBlock`) younger
   * than `maxAgeMs` answers them both; a read under way is joined. By default half a poll interval,
   * the listener's: a head it works from is never more than that older than a read of its own would
   * be. The sender's poll loop takes a whole one (its confirmations are not a request's latency), so
   * while the listener reads or is notified every poll interval the sender reads no head of its own.
   * Older, the head still answers while the chain's next block is not due (`nextBlockDue`): on 12 s
   * blocks a read a second would find the same head eleven times.
   */
  latestHeader(maxAgeMs = this.options.pollIntervalMs / 2): Promise<unknown> {
    const known = this.latest
    const now = performance.now()
    if (known && (now - known.at < maxAgeMs || now < this.nextBlockDue(known)))
      return Promise.resolve(known.block)
    this.latestRead ??= this.read('eth_getBlockByNumber', (endpoint) =>
      endpoint.call<unknown>('eth_getBlockByNumber', ['latest', false]),
    )
      .then((block) => {
        this.noteBlock(block, false)
        return block
      })
      .finally(() => (this.latestRead = undefined))
    return this.latestRead
  }

  /** The latest block the pool knows (read or notified), without a read; undefined before the first. */
  knownLatestHeader(): unknown {
    return this.latest?.block
  }

  /** The chain's block time in seconds, from the heads read or notified (0 while it keeps none). */
  secondsPerBlock(): number {
    return this.pace.secondsPerBlock()
  }

  /** A head a newHeads notification told of: the latest block if newer. */
  noteLatestBlock(block: unknown): void {
    this.noteBlock(block, true)
  }

  private noteBlock(block: unknown, notified: boolean): void {
    const number = blockNumberOf(block)
    if (number === undefined) return
    const known = this.latest
    const knownNumber = blockNumberOf(known?.block)
    if (knownNumber !== undefined && number < knownNumber) return
    const now = performance.now()
    if (known && number === knownNumber) {
      this.latest = { ...known, block, at: now }
      return
    }
    this.latest = { block, at: now, since: now, notified }
    const timestamp = timestampOf(block)
    if (timestamp !== undefined) this.pace.observe({ number, timestamp }, now)
  }

  /**
   * When (performance.now()) to look for the block after the latest, by the chain's pace. A notified
   * head came as its block was made, and the next one's notification comes with the next block: a
   * read is due only once that is a poll interval late. Read heads: when the next block can first be
   * seen by the chain's clock and the earliest sightings of the last blocks (block-interval.ts), with
   * a tenth of a poll interval of slack; a read that finds the same head leaves the read due, so the
   * next poll reads again. While the chain keeps no block time, now.
   */
  private nextBlockDue(known: { since: number; notified: boolean }): number {
    const intervalMs = this.pace.secondsPerBlock() * 1_000
    if (intervalMs === 0) return 0
    const pollMs = this.options.pollIntervalMs
    if (known.notified) return known.since + intervalMs + pollMs
    const seenFrom = this.pace.nextBlockSeenFrom()
    return seenFrom === undefined ? known.since + intervalMs - pollMs / 2 : seenFrom + pollMs / 10
  }

  /** An ethers payload for the pool's provider (src/chain/endpoints/pool-provider.ts). */
  sendPayload(payload: Parameters<JsonRpcProvider['_send']>[0]) {
    const method = Array.isArray(payload) ? (payload[0]?.method ?? 'batch') : payload.method
    return this.read(method, (endpoint) => endpoint.sendPayload(payload))
  }

  /** The best head the pool knows (read now from the healthiest endpoint). */
  async head(): Promise<number> {
    return Number(await this.request<string>('eth_blockNumber', []))
  }

  private async read<T>(method: string, call: (endpoint: RpcEndpoint) => Promise<T>): Promise<T> {
    const failures: unknown[] = []
    for (const endpoint of this.readOrder()) {
      try {
        return await call(endpoint)
      } catch (error) {
        // The node answered (a revert, a refusal): the answer is the caller's, not a failover's.
        if (error instanceof JsonRpcCallError) throw error
        endpoint.failed(error)
        failures.push(error)
      }
    }
    throw this.noAnswer(method, failures)
  }

  /**
   * Sends one batch of signed transactions (in nonce order) to every endpoint in the pool, send-only
   * ones too, and answers per transaction: taken if any endpoint took it, else the first endpoint's
   * refusal. Answers as soon as one endpoint took them all. Throws when no endpoint answered.
   */
  broadcastBatch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    const inPool = this.endpoints.filter((endpoint) => endpoint.state.up)
    const targets = inPool.length > 0 ? inPool : [...this.endpoints]
    return new Promise((resolve, reject) => {
      const answers: Array<RpcOutcome[] | undefined> = []
      const failures: unknown[] = []
      let settled = 0
      let done = false
      const finish = () => {
        if (done || settled < targets.length) return
        done = true
        const answered = answers.filter((outcomes): outcomes is RpcOutcome[] => !!outcomes)
        if (answered.length === 0) return reject(this.noAnswer('eth_sendRawTransaction', failures))
        resolve(calls.map((_, index) => merged(answered.map((outcomes) => outcomes[index]!))))
      }
      targets.forEach((endpoint, at) => {
        endpoint.postBatch(calls).then(
          (outcomes) => {
            answers[at] = outcomes
            settled++
            if (!done && outcomes.every((outcome) => outcome.ok)) {
              done = true
              resolve(outcomes)
            }
            finish()
          },
          (error: unknown) => {
            endpoint.failed(error)
            failures.push(error)
            settled++
            finish()
          },
        )
      })
    })
  }

  /** Asks every endpoint for its head; takes out the ones that do not answer or lag, lets back the others. */
  probe(): Promise<void> {
    this.probing ??= this.probeAll().finally(() => (this.probing = undefined))
    return this.probing
  }

  private async probeAll(): Promise<void> {
    const readers = this.endpoints.filter((endpoint) => !endpoint.sendOnly)
    const heads = await Promise.all(
      this.endpoints.map(async (endpoint) => {
        // The only reader, in the pool: no other head to lag behind, and every read says whether it
        // answers. Probed again once a read took it out, to let it back.
        if (readers.length === 1 && !endpoint.sendOnly && endpoint.state.up) return undefined
        try {
          const method = endpoint.sendOnly ? 'eth_chainId' : 'eth_blockNumber'
          const answer = await withTimeout(endpoint.call<string>(method, []), PROBE_TIMEOUT_MS)
          return endpoint.sendOnly ? undefined : Number(answer)
        } catch (error) {
          // A probe of an endpoint already out is no failed call (its outage counts the callers').
          if (endpoint.state.up) endpoint.failed(error)
          return null
        }
      }),
    )
    const best = Math.max(...heads.filter((head): head is number => typeof head === 'number'))
    this.endpoints.forEach((endpoint, index) => {
      const head = heads[index]
      if (head === null) return
      if (head === undefined) return endpoint.recovered()
      endpoint.state.head = head
      const lag = Math.max(0, best - head)
      if (lag > this.maxLag) return endpoint.lagging(lag, this.maxLag)
      endpoint.state.lag = lag
      endpoint.recovered()
    })
  }

  private noAnswer(method: string, failures: readonly unknown[]): FeedrunnerError {
    return new FeedrunnerError(
      `${method}: no RPC endpoint of ${this.options.label} answers (${this.endpoints.length} configured)`,
      { kind: 'unavailable', code: RPC_UNAVAILABLE, cause: failures[0] },
    )
  }
}

/**
 * The code of a call no RPC endpoint of a chain answered: its callers tell it from a Redis that does
 * not answer (both may be a refused connection underneath) by this, never by a port or words.
 */
export const RPC_UNAVAILABLE = 'rpc_unavailable'

/** One transaction's outcome over every endpoint that answered: taken by any, else the first's refusal. */
function merged(outcomes: readonly RpcOutcome[]): RpcOutcome {
  return outcomes.find((outcome) => outcome.ok) ?? (outcomes[0] as RpcOutcome)
}

function timestampOf(block: unknown): number | undefined {
  const timestamp = (block as { timestamp?: unknown } | null | undefined)?.timestamp
  return typeof timestamp === 'string' || typeof timestamp === 'number'
    ? Number(timestamp)
    : undefined
}

function blockNumberOf(block: unknown): number | undefined {
  const number = (block as { number?: unknown } | null | undefined)?.number
  return typeof number === 'string' || typeof number === 'number' ? Number(number) : undefined
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
