import { setTimeout as delay } from 'node:timers/promises'
import type { Worker } from 'bullmq'
import { DEFAULT_SETTINGS } from '../../config/settings.ts'
import { Connections } from '../../queue/connections.ts'
import { KeySender } from './key-sender.ts'
import { senderSettings, type SenderSettings } from './model.ts'
import { createSenderNode, httpUrlOf } from './node-client.ts'
import { createPollLoop } from './poll-loop.ts'
import { createTxQueues } from './tx-queues.ts'
import { createTxSigner } from './tx-signer.ts'
import { TxStore } from './tx-store.ts'
import {
  jobDataSchema,
  jobIdOf,
  pickKeyIndex,
  txQueueName,
  type TxJobData,
  type TxResult,
  type TxSender,
  type TxSenderOptions,
} from './types.ts'

export {
  DEFAULT_GAS_LIMIT,
  jobIdOf,
  pickKeyIndex,
  txQueueName,
  type KeyStats,
  type TxResult,
  type TxSender,
  type TxSenderOptions,
  type TxStatus,
  type TxSubmission,
} from './types.ts'

/**
 * Sends transactions from one or more keys through BullMQ: one queue and one worker per key, each
 * worker feeding the key's ordered sender (key-sender.ts).
 *
 * Throughput comes from splitting each job in two: the ordered part (allocate the nonce in Redis,
 * sign locally with a cached fee, record the signed bytes, broadcast) runs one job at a time per key,
 * while waiting for receipts is shared: one poll loop checks every key's nonce and the receipts of
 * what it sent, so up to `maxInFlight` jobs per key wait at once.
 *
 * Crash safety: a job's nonce and signed transaction are in Redis before the transaction leaves, so
 * a retried job (BullMQ hands a crashed worker's job to another after its lock expires) broadcasts the
 * same bytes again instead of signing a second transaction with a new nonce.
 */
export function createTxSender(options: TxSenderOptions): TxSender {
  if (options.keys.length === 0) throw new Error('createTxSender: at least one key is required')
  const settings = senderSettings(options)
  const signers = options.keys.map(createTxSigner)
  const addresses = signers.map((signer) => signer.address)
  const queueNames = addresses.map(txQueueName)
  // A sender started alone (tests, the bench) has connections of its own, whose outage lines go to onError.
  const ownConnections = options.connections
    ? undefined
    : new Connections(
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
  })
  const keySenders: KeySender[] = []
  const workers = new Map<KeySender, Worker<TxJobData, TxResult>>()
  const reportError = (error: unknown) =>
    options.onError?.(error instanceof Error ? error : new Error(String(error)))
  const pollLoop = createPollLoop(
    () => node.readHead(),
    async (current) => {
      await Promise.all(keySenders.map((keySender) => keySender.confirmer.check(current)))
    },
    settings.pollIntervalMs,
    reportError,
  )

  function startWorker(keySender: KeySender, index: number): void {
    const worker = queues.startWorker(
      index,
      (jobId, data) => keySender.process(jobId, data),
      (jobId, error) =>
        reportError(
          new Error(`tx job ${jobId ?? '?'} from ${keySender.address} failed: ${error.message}`),
        ),
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
        const store = new TxStore(
          queues.redis,
          `${options.prefix}:txstate:${signer.address.toLowerCase()}`,
        )
        keySenders.push(
          new KeySender({
            signer,
            node,
            store,
            jobs: queues.lookup(index),
            settings,
            rpcUrl: httpUrlOf(options.rpcUrl),
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
      const data = jobDataSchema.parse({
        to: submission.to,
        data: submission.data,
        gasLimit: submission.gasLimit,
        simulate: submission.simulate,
      })
      if (!submission.idempotencyKey) throw new Error('submit: idempotencyKey is required')
      const index = pickKeyIndex(submission.idempotencyKey, queueNames.length)
      const jobId = jobIdOf(submission.idempotencyKey)
      return queues.enqueue(index, jobId, data, submission.resubmit === true, timeoutMs)
    },
    stats: () => keySenders.map((keySender) => keySender.stats()),
    balances: () => Promise.all(addresses.map((address) => node.balanceOf(address))),
    async close() {
      await closeWorkers(workers, settings)
      await pollLoop.stop()
      for (const keySender of keySenders) keySender.failAll(new Error('tx sender closed'))
      await queues.close()
      node.destroy()
      await ownConnections?.close()
    },
  }
}

/**
 * Lets running jobs finish their wait for receipts, but not forever (a dead node would hold them).
 * A worker's close, once begun, waits for its running jobs whatever it is asked later, so the jobs
 * still waiting are failed: BullMQ retries them, and the tx store keeps their attempts.
 */
async function closeWorkers(
  workers: ReadonlyMap<KeySender, Worker<TxJobData, TxResult>>,
  settings: SenderSettings,
): Promise<void> {
  await Promise.all(
    [...workers].map(async ([keySender, worker]) => {
      const closing = worker.close()
      const finished = await Promise.race([
        closing.then(() => true),
        delay(settings.closeTimeoutMs, false, { ref: false }),
      ])
      if (!finished) keySender.failAll(new Error('tx sender closed before the receipt'))
      await closing
    }),
  )
}
