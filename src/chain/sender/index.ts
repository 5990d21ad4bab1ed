import { setTimeout as delay } from 'node:timers/promises'
import {
  FeedrunnerError,
  reviveErrorText,
  rootCauseFirst,
  withContext,
} from '../../config/errors.ts'
import type { Worker } from 'bullmq'
import { DEFAULT_SETTINGS } from '../../config/settings.ts'
import { Connections } from '../../queue/connections.ts'
import { KeySender } from './key-sender.ts'
import { senderSettings, type SenderSettings } from './model.ts'
import { createSenderNode } from './node-client.ts'
import { createPollLoop } from './poll-loop.ts'
import { createTxQueues } from './tx-queues.ts'
import { createTxSigner } from './tx-signer.ts'
import { TxStore } from './tx-store.ts'
import {
  jobDataSchema,
  jobIdOf,
  pickKeyIndex,
  txQueueName,
  txStateKey,
  type TxJobData,
  type TxResult,
  type TxSender,
  type TxSenderOptions,
  type TxSubmission,
} from './types.ts'

export {
  DEFAULT_GAS_LIMIT,
  jobIdOf,
  pickKeyIndex,
  txQueueName,
  txStateKey,
  type KeyStats,
  type TxResult,
  type TxSender,
  type TxSenderOptions,
  type TxStatus,
  type TxSubmission,
} from './types.ts'

/**
 * Sends transactions from one or more keys, each through its ordered sender (key-sender.ts).
 *
 * A started sender runs a submission itself, in this process: no queue hop between the run that
 * asks and the key's sender (issue 20: the `tx-<address>` job cost a request dozens of Redis
 * commands). A process that only submits (never started) hands the job to the key's BullMQ queue,
 * whose worker runs in a process that started its sender.
 *
 * Throughput comes from splitting each job in two: the ordered part (allocate the nonce in Redis,
 * sign locally with a cached fee, record the signed bytes, broadcast) runs one job at a time per key,
 * while waiting for receipts is shared: one poll loop checks every key's nonce and the receipts of
 * what it sent, so up to `maxInFlight` jobs per key wait at once.
 *
 * Crash safety: a job's data and nonce, then its signed transaction, are in Redis before the
 * transaction leaves, so a job run again (a redelivered run after a crash, or BullMQ handing a
 * crashed worker's job to another) broadcasts the same bytes instead of signing a second transaction
 * with a new nonce, and a restarted sender re-broadcasts (or signs) what a crash left.
 */
export function createTxSender(options: TxSenderOptions): TxSender {
  if (options.keys.length === 0) throw new Error('createTxSender: at least one key is required')
  const settings = senderSettings(options)
  const signers = options.keys.map(createTxSigner)
  const addresses = signers.map((signer) => signer.address)
  const queueNames = addresses.map((address) => txQueueName(address, options.chainId))
  const ownConnections = options.connections ? undefined : connectionsOfItsOwn(options)
  const queues = createTxQueues(
    options.connections ?? (ownConnections as Connections),
    queueNames,
    settings,
  )
  const node = createSenderNode({
    rpcUrl: options.rpcUrl,
    chainId: options.chainId,
    pollIntervalMs: settings.pollIntervalMs,
    priorityFeeWei: options.priorityFeeWei,
    rpcMaxResponseBytes: options.rpcMaxResponseBytes,
    pool: options.pool,
    provider: options.provider,
  })
  const keySenders: KeySender[] = []
  const workers = new Map<KeySender, Worker<TxJobData, TxResult>>()
  const reportError = (error: unknown) =>
    options.onError?.(error instanceof Error ? error : new Error(String(error)))
  const pollLoop = createPollLoop(
    () => node.readHead(),
    async (current) => {
      await Promise.all(
        keySenders.map(async (keySender) => {
          await keySender.renewLeases()
          await keySender.confirmer.check(current)
        }),
      )
    },
    settings.pollIntervalMs,
    reportError,
    () => keySenders.some((keySender) => keySender.hasWork),
  )

  function startWorker(keySender: KeySender, index: number): void {
    const worker = queues.startWorker(
      index,
      (jobId, data) => keySender.process(jobId, data),
      (jobId, error) => {
        // A failed reason may be a stored error (a refusal for good): told root cause first.
        const failure = error.message.startsWith('{') ? reviveErrorText(error.message) : error
        const where = withContext(`tx job ${jobId ?? '?'} from ${keySender.address}`, failure)
        reportError(
          new FeedrunnerError(rootCauseFirst(where), { kind: where.kind, cause: failure }),
        )
      },
    )
    workers.set(keySender, worker)
  }

  return {
    addresses,
    queueNames,
    async start() {
      await node.connect()
      await node.readHead()
      await node.currentFees()
      signers.forEach((signer, index) => {
        const chainId = node.chainId as number
        const store = new TxStore(queues.redis, txStateKey(options.prefix, chainId, signer.address))
        keySenders.push(
          new KeySender({
            signer,
            node,
            store,
            jobs: queues.lookup(index),
            settings,
            wake: pollLoop.wake,
            reportError,
          }),
        )
      })
      await Promise.all(keySenders.map((keySender) => keySender.recover()))
      pollLoop.start()
      keySenders.forEach(startWorker)
    },
    async submit(submission, timeoutMs) {
      const data = jobDataOf(submission)
      if (!submission.idempotencyKey) throw new Error('submit: idempotencyKey is required')
      const index = pickKeyIndex(submission.idempotencyKey, queueNames.length)
      const jobId = jobIdOf(submission.idempotencyKey)
      const resubmit = submission.resubmit === true
      // A started sender runs the key's sender itself: no queue hop. A process that only submits
      // hands the job to the key's queue, whose worker runs in a process that started its sender.
      const keySender = keySenders[index]
      if (!keySender) return queues.enqueue(index, jobId, data, resubmit, timeoutMs)
      return withTimeout(keySender.runDirect(jobId, data, resubmit), jobId, timeoutMs)
    },
    stats: () => keySenders.map((keySender) => keySender.stats()),
    async resyncNonces() {
      await Promise.all(keySenders.map((keySender) => keySender.recover()))
    },
    balances: () => Promise.all(addresses.map((address) => node.balanceOf(address))),
    async close() {
      await closeRuns(keySenders, workers, settings)
      await pollLoop.stop()
      for (const keySender of keySenders) keySender.failAll(new Error('tx sender closed'))
      await queues.close()
      node.destroy()
      await ownConnections?.close()
    },
  }
}

/** A sender started alone (tests, the bench) has connections of its own, whose outage lines go to onError. */
function connectionsOfItsOwn(options: TxSenderOptions): Connections {
  return new Connections(
    {
      REDIS_URL: options.redisUrl,
      OUTAGE_REPORT_INTERVAL_MS: DEFAULT_SETTINGS.OUTAGE_REPORT_INTERVAL_MS,
    },
    {
      warn: (_fields, message) => options.onError?.(new Error(message)),
      error: (_fields, message) => options.onError?.(new Error(message)),
      info: () => undefined,
    },
  )
}

/** What a job carries of a submission, checked (the idempotency key is its id, not its data). */
function jobDataOf(submission: TxSubmission): TxJobData {
  return jobDataSchema.parse({
    to: submission.to,
    data: submission.data,
    gasLimit: submission.gasLimit,
    simulate: submission.simulate,
  })
}

/**
 * Lets running jobs finish their wait for receipts, but not forever (a dead node would hold them).
 * A worker's close, once begun, waits for its running jobs whatever it is asked later, so the jobs
 * still waiting are failed: BullMQ retries them (a job run without a queue is run again by its
 * caller's retry), and the tx store keeps their attempts.
 */
async function closeRuns(
  keySenders: readonly KeySender[],
  workers: ReadonlyMap<KeySender, Worker<TxJobData, TxResult>>,
  settings: SenderSettings,
): Promise<void> {
  await Promise.all(
    keySenders.map(async (keySender) => {
      const worker = workers.get(keySender)
      const closing = Promise.all([worker?.close(), keySender.directSettled()])
      const finished = await Promise.race([
        closing.then(() => true),
        delay(settings.closeTimeoutMs, false, { ref: false }),
      ])
      if (!finished) keySender.failAll(new Error('tx sender closed before the receipt'))
      await closing
    }),
  )
}

/** A direct run's wait, bounded like a queued job's `waitUntilFinished` (the run itself goes on). */
function withTimeout(
  run: Promise<TxResult>,
  jobId: string,
  timeoutMs: number | undefined,
): Promise<TxResult> {
  if (timeoutMs === undefined) return run
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`tx job ${jobId} timed out before finishing (${timeoutMs} ms)`)),
      timeoutMs,
    )
  })
  return Promise.race([run, timedOut]).finally(() => clearTimeout(timer))
}
