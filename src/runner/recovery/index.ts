import { isError, type JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import type { Logger } from '../../config/logger.ts'
import type { OracleRequestEvent } from '../../chain/operator.ts'
import type { RequestListener } from '../../chain/listener/index.ts'
import { FeedrunnerError, rootCauseFirst } from '../../config/errors.ts'
import { authorisedSenders } from '../../chain/operator.ts'
import { pooledNonces, waitForPooledMined } from '../../chain/pooled-transactions.ts'
import { RedisGeneration } from './generation.ts'
import { RequestWindow, type Verdict } from './request-window.ts'

export { createReconciler, type Reconciler } from './reconciler.ts'

export interface RecoveryParts {
  redis: Redis
  prefix: string
  provider: JsonRpcProvider
  operators: readonly string[]
  log: Logger
  /** How often the generation key is read. */
  checkEveryMs: number
  /** The widest eth_getLogs range (CHAIN_LOG_RANGE_BLOCKS). */
  logRangeBlocks?: number
  /**
   * What the node's pool holds of every sender that may answer the Operators' requests (this
   * process's keys, the Operators' and the forwarder's authorised senders: other runners' keys too)
   * when Redis has no record of what it answers is left to be mined (up to `boundMs`) before the
   * requests still open are read from the chain.
   */
  pooled: {
    keys: readonly string[]
    forwarder?: string
    boundMs: number
    pollIntervalMs: number
  }
}

export interface Recovery {
  /**
   * The generation key: the listener's consumed markers carry its value, so a marker written after
   * a loss (before it was noticed) does not keep the rebuild from delivering that log again.
   */
  readonly generationKey: string
  /**
   * Writes a generation when there is none and remembers the one in force: once, before the
   * listener starts (its markers carry it). Later ones are adopted only by a rebuild that succeeded.
   */
  adopt(): Promise<void>
  /**
   * Where a listener with no checkpoint starts: REBUILD_LOOK_BACK_SECONDS back by the chain's time,
   * and the filter that skips the requests answered or cancelled already.
   */
  openWindow(): Promise<number>
  /**
   * Where a listener starts when Redis holds no checkpoint of it (a first start, or Redis lost its
   * state while no runner ran): `configured` (RUNNER_FROM_BLOCK) or `openWindow`'s block, once what
   * the node's pool holds of the senders is mined (a fulfilment in the pool answers its request;
   * read before, the request looks open).
   */
  firstBlockWithoutCheckpoint(configured: number | undefined): Promise<number>
  /**
   * What to do with a delivered request: `skip` one from the window read again that the Operator
   * answered or its requester cancelled; `expired` one from it past its cancelExpiration and still
   * open (its run record is made again, refused, if Redis lost it: it is not run); `run-again` one
   * from it that may still be answered (a run record a process of the lost generation wrote must not
   * keep it from running); `run` any other. A request older than the window (a listener that reads on
   * from a checkpoint older than that: no runner ran for longer) first has what the chain closed read
   * from its block on, so that it too is judged by what the chain says.
   */
  verdict(event: OracleRequestEvent): Promise<Verdict>
  /**
   * Watches for a Redis that lost its state (after `adopt`); rebuilds the listener's reading from
   * the chain.
   */
  watch(listener: RequestListener | undefined): Promise<void>
  /** Reads the generation once now (what the watch does every `checkEveryMs`). */
  check(): Promise<boolean>
  stop(): Promise<void>
}

/**
 * Redis is a cache of the chain. When it loses what it held (FLUSHALL, an empty instance in its place,
 * a failover to a replica that lags), the runner notices the generation key gone, says so in one line,
 * and reads the OracleRequest logs of the last REBUILD_LOOK_BACK_SECONDS again; the ones the Operator
 * answered or their requesters cancelled are skipped, the ones past their cancelExpiration get their
 * run record back (refused), the others run again. (Each sender key's new owner reads its
 * nonce from the chain again, after the node's pool let its transactions be mined: key-recovery.ts.)
 * (Cron firings need nothing: the ticker adds each as it falls due, cron-ticker.ts.)
 * The new generation is adopted only once the rebuild succeeded: one that fails is tried again at the
 * next check, and says so once a minute until it succeeds.
 */
export function createRecovery(parts: RecoveryParts): Recovery {
  const generationKey = `${parts.prefix}:generation`
  const generation = new RedisGeneration(parts.redis, generationKey)
  const window = new RequestWindow(parts)
  let timer: NodeJS.Timeout | undefined
  let checking: Promise<boolean> | undefined
  let listener: RequestListener | undefined
  /** Ends a rebuild's wait for the node's pool when the runner stops. */
  const stopping = new AbortController()
  /** A loss seen and not rebuilt yet. */
  let rebuilding: FailedRebuilds | undefined

  async function rebuild(level: 'warn' | 'info'): Promise<void> {
    if (!listener) return
    await letPooledBeMined(parts, stopping.signal)
    const fromBlock = await window.read()
    await listener.rewind(fromBlock)
    parts.log[level](
      { fromBlock, closedOnChain: window.closedCount },
      'rebuilt from the chain: reading the OracleRequest logs of the last 24 hours (chain time) again',
    )
  }

  /** The level of the loss being rebuilt from (announceLoss). */
  let lossLevel: 'warn' | 'info' = 'warn'

  async function check(): Promise<boolean> {
    if (!rebuilding) {
      const loss = await generation.loss()
      if (!loss) return false
      lossLevel = announceLoss(parts.log, generationKey, loss)
      rebuilding = new FailedRebuilds(parts.log)
    }
    try {
      await rebuild(lossLevel)
    } catch (error) {
      if (!stopping.signal.aborted) rebuilding.failed(error)
      throw error
    }
    await generation.adopt()
    rebuilding.succeeded()
    rebuilding = undefined
    return true
  }

  return {
    generationKey,
    async adopt() {
      await generation.adopt()
    },
    openWindow: () => window.read(),
    async firstBlockWithoutCheckpoint(configured) {
      const waited = await letPooledBeMined(parts, stopping.signal)
      if (configured !== undefined) return configured
      const read = window.fromBlock
      return waited || read === undefined ? window.read() : read
    },
    verdict: (event) => window.verdict(event),
    async watch(watchedListener) {
      listener = watchedListener
      timer = setInterval(() => {
        // One check at a time; while Redis is away the check fails and the connection's own
        // reporter says so.
        checking ??= check()
          .catch(() => false)
          .finally(() => (checking = undefined))
      }, parts.checkEveryMs)
      timer.unref()
    },
    check,
    async stop() {
      clearInterval(timer)
      stopping.abort()
      await checking
    },
  }
}

/**
 * Says what was lost: at warn when Redis surely lost its state, at info when another server merely
 * answers (after a harmless restart the rebuild only reads). The rebuild's line follows at that level.
 */
function announceLoss(log: Logger, key: string, loss: 'gone' | 'other-server'): 'warn' | 'info' {
  const level = loss === 'gone' ? 'warn' : 'info'
  log[level](
    { key, loss },
    loss === 'gone'
      ? 'Redis lost its state (the generation key is gone): rebuilding from the chain'
      : 'another Redis server answers since the connection came back (a restart or a failover): what it was told last may be missing, so the open requests are read from the chain again',
  )
  return level
}

/** A rebuild's failed tries, told once a minute while they last, and once when one succeeds. */
class FailedRebuilds {
  private failures = 0
  private toldAt = 0

  constructor(private readonly log: RecoveryParts['log']) {}

  failed(error: unknown): void {
    this.failures += 1
    if (Date.now() - this.toldAt < 60_000) return
    this.toldAt = Date.now()
    this.log.warn(
      { failures: this.failures, err: rootCauseFirst(error) },
      'the rebuild from the chain failed; trying again',
    )
  }

  succeeded(): void {
    if (this.failures > 0)
      this.log.info({ failures: this.failures }, 'the rebuild from the chain succeeded')
  }
}

/**
 * A fulfilment in the node's pool when Redis lost its record (the key's owner had sent it) closes
 * its request once mined. Read before that, the request looks open, runs again, and another key
 * (one with nothing pooled, free at once) sends a second fulfilment that reverts: so the chain is
 * read once what the pool held of every sender that may answer is mined.
 * Every authorised sender, not only this process's keys: the key that sent it may be another
 * runner's, or no runner's any more. Whether it waited.
 */
async function letPooledBeMined(parts: RecoveryParts, stopping: AbortSignal): Promise<boolean> {
  const { pooled, provider, log } = parts
  const addresses = await sendersOf(parts)
  const send = <T>(method: string, params: unknown[]) => provider.send(method, params) as Promise<T>
  const seconds = Math.round(pooled.boundMs / 1000)
  let waited = false
  // Queued ones too (behind a nonce gap: counted by no transaction count), where the node tells:
  // their key's owner fills the gap, and they answer their requests once mined.
  const held = await pooledNonces(send, addresses)
  const { mined } = await waitForPooledMined(send, addresses, {
    ...pooled,
    ...(held ? { pooled: held } : {}),
    signal: stopping,
    onWaiting: (count) => {
      waited = true
      log.warn(
        { pooled: count, senders: addresses.length },
        `the node's pool holds ${count} transaction(s) of the Operators' authorised senders, and Redis has no record of what they answer: the chain is read for open requests once they are mined (up to ${seconds} s)`,
      )
    },
  })
  if (stopping.aborted) throw new FeedrunnerError('the runner is stopping', { kind: 'unavailable' })
  if (!mined)
    log.warn(
      { boundSeconds: seconds },
      `transactions of the Operators' authorised senders are still in the node's pool after ${seconds} s: the chain is read now (a request they answer may be answered twice; the second reverts)`,
    )
  return waited
}

/**
 * This process's keys and every sender the Operators and the forwarder authorise. A contract that
 * answers getAuthorizedSenders with a revert or nothing readable is said at each read, and its
 * senders left out (this process's keys are still waited for); a node that does not answer fails
 * the read, and the caller tries again.
 */
async function sendersOf(parts: RecoveryParts): Promise<string[]> {
  const { pooled, provider, log } = parts
  const receivers = [...parts.operators, ...(pooled.forwarder ? [pooled.forwarder] : [])]
  const lists = await Promise.all(
    receivers.map((receiver) =>
      authorisedSenders(provider, receiver).catch((error: unknown) => {
        if (!isError(error, 'CALL_EXCEPTION') && !isError(error, 'BAD_DATA')) throw error
        log.warn(
          { receiver, err: rootCauseFirst(error) },
          `could not read the authorised senders of ${receiver} (getAuthorizedSenders): only this runner's keys are waited for in the node's pool`,
        )
        return []
      }),
    ),
  )
  const unique = new Map<string, string>()
  for (const address of [...pooled.keys, ...lists.flat()])
    unique.set(address.toLowerCase(), address)
  return [...unique.values()]
}
