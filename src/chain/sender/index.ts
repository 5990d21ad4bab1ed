import { randomUUID } from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import { getAddress } from 'ethers'
import type { Redis } from 'ioredis'
import { FeedrunnerError } from '../../config/errors.ts'
import { DEFAULT_SETTINGS } from '../../config/settings.ts'
import { Connections } from '../../queue/connections.ts'
import { KeySender } from './key-sender.ts'
import { JobRuns } from './job-runs.ts'
import { senderSettings, type UnsignedTx } from './model.ts'
import { createSenderNode } from './node-client.ts'
import { KeyLeases } from './ownership/key-leases.ts'
import { createPollLoop } from './poll-loop.ts'
import { createTxSigner } from './tx-signer.ts'
import { TxStore } from './tx-store.ts'
import {
  jobDataSchema,
  jobIdOf,
  txStateBase,
  type KeyStats,
  type TxResult,
  type TxSender,
  type TxSenderOptions,
  type TxSubmission,
} from './types.ts'

export {
  DEFAULT_GAS_LIMIT,
  jobIdOf,
  txStateBase,
  type KeyStats,
  type TxResult,
  type TxSender,
  type TxSenderOptions,
  type TxStatus,
  type TxSubmission,
} from './types.ts'
export { HandedOverError } from './model.ts'

/**
 * Sends transactions from one or more keys, each ordered by the one process that owns it (as
 * Chainlink's broadcaster runs one loop per address): a lease per key in Redis, expiring by Redis's
 * clock (ownership/key-leases.ts). Processes share the keys, each about its share; a key whose owner
 * died is taken over once its lease runs out, and its new owner sends again and watches what was in
 * flight (key-recovery.ts).
 *
 * A submission goes to the least loaded key this process owns. A job is bound to the key that sent
 * it for good: a run retried anywhere finds the job's record, and resumes it (this process owns the
 * key) or waits for the key's owner to settle it, so a request is never signed twice.
 *
 * One poll loop looks at the chain for every key this process owns: receipts, confirmations, stuck
 * transactions (confirmer.ts), and reads nothing while no key has anything to watch.
 */
export function createTxSender(options: TxSenderOptions): TxSender {
  return new KeyedTxSender(options)
}

class KeyedTxSender implements TxSender {
  readonly addresses: readonly string[]
  private readonly settings: ReturnType<typeof senderSettings>
  private readonly signers: ReturnType<typeof createTxSigner>[]
  private readonly ownConnections: Connections | undefined
  private readonly redis: Redis
  private readonly node: ReturnType<typeof createSenderNode>
  private readonly keySenders = new Map<string, KeySender>()
  private readonly ownershipListeners: Array<() => void> = []
  private readonly pollLoop: ReturnType<typeof createPollLoop>
  private jobs: JobRuns | undefined
  private leases: KeyLeases | undefined

  constructor(private readonly options: TxSenderOptions) {
    if (options.keys.length === 0) throw new Error('createTxSender: at least one key is required')
    this.settings = senderSettings(options)
    this.signers = options.keys.map(createTxSigner)
    this.addresses = this.signers.map((signer) => signer.address)
    this.ownConnections = options.connections ? undefined : connectionsOfItsOwn(options)
    const connections = options.connections ?? (this.ownConnections as Connections)
    // Auto-pipelined: the attempts of jobs signed in one tick and their settlements leave in one write.
    this.redis = connections.redis('worker', 'tx sender', { enableAutoPipelining: true })
    this.node = createSenderNode({ ...options, pollIntervalMs: this.settings.pollIntervalMs })
    const withWork = () => [...this.keySenders.values()].filter((keySender) => keySender.hasWork)
    this.pollLoop = createPollLoop(
      () => this.node.readHead(),
      async (current) => {
        await Promise.all(withWork().map((keySender) => keySender.confirmer.check(current)))
      },
      this.settings.pollIntervalMs,
      this.reportError,
      () => withWork().length > 0,
    )
  }

  private readonly reportError = (error: unknown): void =>
    this.options.onError?.(error instanceof Error ? error : new Error(String(error)))

  private readonly ownershipChanged = (): void =>
    this.ownershipListeners.forEach((listener) => listener())

  async start(): Promise<void> {
    const { node, settings, options } = this
    await node.connect()
    await node.readHead()
    await node.currentFees()
    const chainId = node.chainId as number
    const store = new TxStore(this.redis, txStateBase(options.prefix, chainId))
    this.jobs = new JobRuns(this.keySenders, store, chainId, settings.pollIntervalMs)
    for (const signer of this.signers) {
      const { logger } = options
      const { reportError } = this
      const parts = { signer, node, store, settings, reportError, wake: this.pollLoop.wake, logger }
      this.keySenders.set(signer.address.toLowerCase(), new KeySender(parts))
    }
    this.leases = new KeyLeases(
      this.redis,
      {
        base: txStateBase(options.prefix, chainId),
        addresses: this.addresses,
        leaseMs: settings.keyLeaseMs,
        process: randomUUID().slice(0, 12),
      },
      keyOwner(this.keySenders, options.logger, this.ownershipChanged),
    )
    this.pollLoop.start()
    await this.leases.start()
    // The keys taken at start send once recovered; a recovery that keeps failing (the node away)
    // goes on in the background, and the key takes work once it is done. A recovery of a used key
    // Redis holds nothing of waits one lease itself (key-recovery.ts), hence two.
    await Promise.race([
      Promise.all([...this.keySenders.values()].map((keySender) => keySender.activation)),
      delay(2 * settings.keyLeaseMs, undefined, { ref: false }),
    ])
  }

  async submit(submission: TxSubmission, timeoutMs?: number): Promise<TxResult> {
    if (!this.jobs) throw new Error('submit: start the sender first')
    const data = jobDataSchema.parse({
      to: submission.to,
      data: submission.data,
      gasLimit: submission.gasLimit,
    })
    if (!submission.idempotencyKey) throw new Error('submit: idempotencyKey is required')
    const tx: UnsignedTx = {
      to: getAddress(data.to),
      data: data.data,
      gasLimit: data.gasLimit ?? this.settings.defaultGasLimit,
      value: 0n,
    }
    const signal = boundSignal(submission.signal, timeoutMs)
    const running = this.jobs.run(jobIdOf(submission.idempotencyKey), tx, signal, submission.from)
    return untilAborted(running, signal, submission.idempotencyKey)
  }

  stats(): KeyStats[] {
    return [...this.keySenders.values()].map((keySender) => keySender.stats())
  }

  ownership(): { available: number; owned: number; lostLeases: number } {
    const all = [...this.keySenders.values()]
    return {
      available: all.filter((keySender) => keySender.available).length,
      owned: all.filter((keySender) => keySender.owned).length,
      lostLeases: this.leases?.lostCount ?? 0,
    }
  }

  onOwnershipChange(listener: () => void): void {
    this.ownershipListeners.push(listener)
  }

  balances(): Promise<bigint[]> {
    return Promise.all(this.addresses.map((address) => this.node.balanceOf(address)))
  }

  async chainTime(): Promise<number> {
    return (await this.node.recentHead()).timestamp
  }

  async bound(idempotencyKey: string): Promise<boolean> {
    if (!this.jobs) throw new Error('bound: start the sender first')
    return this.jobs.bound(jobIdOf(idempotencyKey))
  }

  async close(): Promise<void> {
    if (this.jobs) this.jobs.closing = true
    const all = [...this.keySenders.values()]
    // Transactions still waiting for receipts after the close timeout are handed over: their
    // records are in Redis, and whoever takes the key next watches them to their end.
    await Promise.race([
      Promise.all(all.map((keySender) => keySender.settled())),
      delay(this.settings.closeTimeoutMs, undefined, { ref: false }),
    ])
    for (const keySender of all) keySender.handOver('was let go: this process is closing')
    await this.leases?.stop()
    await this.pollLoop.stop()
    this.ownershipChanged()
    this.node.destroy()
    this.redis.disconnect()
    await this.ownConnections?.close()
  }
}

/** What the leases tell the key senders, told in one line each, and the runner through `changed`. */
function keyOwner(
  keySenders: ReadonlyMap<string, KeySender>,
  logger: TxSenderOptions['logger'],
  changed: () => void,
): ConstructorParameters<typeof KeyLeases>[2] {
  const at = (address: string) => keySenders.get(address.toLowerCase()) as KeySender
  return {
    acquired(address, fence) {
      logger?.info({ address, fence }, `took sender key ${address}: recovering its transactions`)
      void at(address)
        .activate(fence)
        .then(() => {
          if (at(address).available) logger?.info({ address }, `sender key ${address} is sending`)
          changed()
        })
    },
    lost(address) {
      const keySender = at(address)
      const voluntary = keySender.idle && keySender.state === 'draining'
      keySender.handOver(
        voluntary ? 'was let go to another process' : 'lost its lease to another process',
      )
      if (!voluntary) keySender.counters.leasesLost += 1
      if (voluntary)
        logger?.info({ address }, `let sender key ${address} go: another process takes its share`)
      else
        logger?.warn(
          { address },
          `lost the lease of sender key ${address} (not renewed in time, or Redis lost it): its transactions are handed to its next owner`,
        )
      changed()
    },
    drain(address, draining) {
      const before = at(address).available
      at(address).setDraining(draining)
      if (before !== at(address).available) changed()
    },
    idle: (address) => at(address).idle,
  }
}

/** The caller's signal, and a timeout if one is given. */
function boundSignal(signal: AbortSignal | undefined, timeoutMs: number | undefined) {
  const signals = [signal, timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs)]
  const given = signals.filter((one): one is AbortSignal => one !== undefined)
  return given.length === 0 ? undefined : AbortSignal.any(given)
}

/** A job's wait, ended by the signal (the job itself goes on, watched by its key's owner). */
function untilAborted(
  run: Promise<TxResult>,
  signal: AbortSignal | undefined,
  idempotencyKey: string,
): Promise<TxResult> {
  if (!signal) return run
  return new Promise<TxResult>((resolve, reject) => {
    const abort = () =>
      reject(
        new FeedrunnerError(
          `tx job ${idempotencyKey} did not finish in time; its transaction, if sent, is still watched`,
          { kind: 'timeout', cause: signal.reason },
        ),
      )
    if (signal.aborted) {
      // Nobody waits for the run any more (a stop, a bound already spent): its failure is handled here.
      run.catch(() => undefined)
      return abort()
    }
    signal.addEventListener('abort', abort, { once: true })
    run.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort))
  })
}

/** A sender started alone (tests, the bench) has connections of its own, whose outage lines go to onError. */
function connectionsOfItsOwn(options: TxSenderOptions): Connections {
  return new Connections(
    {
      REDIS_URL: options.redisUrl,
      OUTAGE_REPORT_INTERVAL_MS: DEFAULT_SETTINGS.OUTAGE_REPORT_INTERVAL_MS,
      QUEUE_PREFIX: options.prefix,
    },
    {
      warn: (_fields, message) => options.onError?.(new Error(message)),
      error: (_fields, message) => options.onError?.(new Error(message)),
      info: () => undefined,
    },
  )
}
