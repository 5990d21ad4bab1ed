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
  if (options.keys.length === 0) throw new Error('createTxSender: at least one key is required')
  const settings = senderSettings(options)
  const signers = options.keys.map(createTxSigner)
  const addresses = signers.map((signer) => signer.address)
  const ownConnections = options.connections ? undefined : connectionsOfItsOwn(options)
  const connections = options.connections ?? (ownConnections as Connections)
  // Auto-pipelined: the attempts of jobs signed in one tick and their settlements leave in one write.
  const redis: Redis = connections.redis('worker', 'tx sender', { enableAutoPipelining: true })
  const node = createSenderNode({ ...options, pollIntervalMs: settings.pollIntervalMs })
  const keySenders = new Map<string, KeySender>()
  const ownershipListeners: Array<() => void> = []
  const ownershipChanged = () => ownershipListeners.forEach((listener) => listener())
  let jobs: JobRuns | undefined
  let leases: KeyLeases | undefined
  const reportError = (error: unknown) =>
    options.onError?.(error instanceof Error ? error : new Error(String(error)))
  const pollLoop = createPollLoop(
    () => node.readHead(),
    async (current) => {
      const owned = [...keySenders.values()].filter((keySender) => keySender.hasWork)
      await Promise.all(owned.map((keySender) => keySender.confirmer.check(current)))
    },
    settings.pollIntervalMs,
    reportError,
    () => [...keySenders.values()].some((keySender) => keySender.hasWork),
  )

  return {
    addresses,
    async start() {
      await node.connect()
      await node.readHead()
      await node.currentFees()
      const chainId = node.chainId as number
      const store = new TxStore(redis, txStateBase(options.prefix, chainId))
      jobs = new JobRuns(keySenders, store, chainId, settings.pollIntervalMs)
      for (const signer of signers) {
        const { logger } = options
        const parts = { signer, node, store, settings, reportError, wake: pollLoop.wake, logger }
        keySenders.set(signer.address.toLowerCase(), new KeySender(parts))
      }
      leases = new KeyLeases(
        redis,
        {
          base: txStateBase(options.prefix, chainId),
          addresses,
          leaseMs: settings.keyLeaseMs,
          process: randomUUID().slice(0, 12),
        },
        keyOwner(keySenders, options.logger, ownershipChanged),
      )
      pollLoop.start()
      await leases.start()
      // The keys taken at start send once recovered; a recovery that keeps failing (the node away)
      // goes on in the background, and the key takes work once it is done.
      await Promise.race([
        Promise.all([...keySenders.values()].map((keySender) => keySender.activation)),
        delay(settings.keyLeaseMs, undefined, { ref: false }),
      ])
    },
    async submit(submission: TxSubmission, timeoutMs?: number) {
      if (!jobs) throw new Error('submit: start the sender first')
      const data = jobDataSchema.parse({
        to: submission.to,
        data: submission.data,
        gasLimit: submission.gasLimit,
      })
      if (!submission.idempotencyKey) throw new Error('submit: idempotencyKey is required')
      const tx: UnsignedTx = {
        to: getAddress(data.to),
        data: data.data,
        gasLimit: data.gasLimit ?? settings.defaultGasLimit,
        value: 0n,
      }
      const signal = boundSignal(submission.signal, timeoutMs)
      const running = jobs.run(jobIdOf(submission.idempotencyKey), tx, signal, submission.from)
      return untilAborted(running, signal, submission.idempotencyKey)
    },
    stats: () => [...keySenders.values()].map((keySender) => keySender.stats()),
    ownership: () => {
      const all = [...keySenders.values()]
      return {
        available: all.filter((keySender) => keySender.available).length,
        owned: all.filter((keySender) => keySender.owned).length,
        lostLeases: leases?.lostCount ?? 0,
      }
    },
    onOwnershipChange: (listener) => void ownershipListeners.push(listener),
    balances: () => Promise.all(addresses.map((address) => node.balanceOf(address))),
    chainTime: async () => (await node.recentHead()).timestamp,
    async bound(idempotencyKey: string) {
      if (!jobs) throw new Error('bound: start the sender first')
      return jobs.bound(jobIdOf(idempotencyKey))
    },
    async close() {
      if (jobs) jobs.closing = true
      const all = [...keySenders.values()]
      // Transactions still waiting for receipts after the close timeout are handed over: their
      // records are in Redis, and whoever takes the key next watches them to their end.
      await Promise.race([
        Promise.all(all.map((keySender) => keySender.settled())),
        delay(settings.closeTimeoutMs, undefined, { ref: false }),
      ])
      for (const keySender of all) keySender.handOver('was let go: this process is closing')
      await leases?.stop()
      await pollLoop.stop()
      ownershipChanged()
      node.destroy()
      redis.disconnect()
      await ownConnections?.close()
    },
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
    if (signal.aborted) return abort()
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
