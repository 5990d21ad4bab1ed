import { Queue } from 'bullmq'
import type { JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import type { Logger } from '../config/logger.ts'
import type { CancelRequestEvent, OracleRequestEvent } from '../chain/operator.ts'
import { createRequestListener, type RequestListener } from '../chain/listener.ts'
import { connectProvider } from '../chain/provider.ts'
import { createTxSender, type TxSender } from '../chain/sender.ts'
import type { RunOptions } from '../pipeline/index.ts'
import { createRedisConnection } from '../queue/connection.ts'
import { operateRunner } from '../health/operate.ts'
import { recordRequest } from '../metrics/index.ts'
import type { JobRegistry } from './job-registry.ts'
import { baseRecord, createPipelineWorker } from './pipeline-worker.ts'
import { requestJobId, toRequestPayload } from './request-payload.ts'
import { RunStore } from './run-record.ts'
import { checkSendersAuthorised } from './sender-authorisation.ts'
import { senderChainAccess } from './sender-chain-access.ts'

export const REQUESTS_QUEUE = 'requests'

export interface RunnerOptions {
  rpcUrl: string
  chainId: number
  redisUrl: string
  prefix: string
  /** Sender keys; never logged, never queued. */
  keys: readonly string[]
  registry: JobRegistry
  logger: Logger
  /** Requests run at once by this process, per sender key (default 64). */
  concurrency?: number
  /** A request held by a crashed process is taken over after about this long. */
  lockDurationMs?: number
  pollIntervalMs?: number
  /** First block to read when no checkpoint is stored (default: the head). */
  fromBlock?: number
  txConfirmations?: number
  /** The least time between two broadcasts of one key (default: the sender's). */
  txBroadcastIntervalMs?: number
  /** Extra run options: environment with BRIDGE_<NAME>_URL, aliases, ... */
  runOptions?: Partial<RunOptions>
  /** Set false for a process that only listens (no pipeline worker, no sender). */
  work?: boolean
  /** Set false for a process that only works (no listener). */
  listen?: boolean
}

export interface Runner {
  start(): Promise<void>
  /** Lets in-flight runs finish (or hands them back to the queue), then closes everything. */
  stop(): Promise<void>
  readonly runs: RunStore
  readonly registry: JobRegistry
  readonly listener: RequestListener | undefined
  readonly sender: TxSender | undefined
  readonly requestsQueue: Queue
}

/**
 * The node's part: the listener turns confirmed `OracleRequest` logs into `requests` jobs (one per
 * request, whichever process saw it), the pipeline worker runs the matching job spec, and its ethtx
 * goes through the ordered transaction sender. Every process may listen and work at once.
 */
export function createRunner(options: RunnerOptions): Runner {
  const log = options.logger.child({ component: 'runner' })
  // Auto-pipelined: the run updates of many concurrent runs leave in one write per tick.
  const redis: Redis = createRedisConnection(options.redisUrl, 'worker', {
    enableAutoPipelining: true,
  })
  // While Redis is away these connections reconnect by themselves; without a listener ioredis prints
  // every failed attempt as an "Unhandled error event" with a stack trace.
  redis.on('error', () => undefined)
  // Auto-pipelined too: a scan's adds of many requests leave in one write.
  const queueConnection = createRedisConnection(options.redisUrl, 'worker', {
    enableAutoPipelining: true,
  })
  queueConnection.on('error', () => undefined)
  const runs = new RunStore(redis, `${options.prefix}:runner`)
  const requestsQueue = new Queue(REQUESTS_QUEUE, {
    connection: queueConnection,
    prefix: options.prefix,
    defaultJobOptions: {
      // Kept for a day so a late duplicate delivery (another process's listener) joins the finished job.
      removeOnComplete: { age: 24 * 3600, count: 100_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
      // Transient bridge failures (adapter restarting) are retried: 1+2+4+...+64 s, about two minutes.
      attempts: 8,
      backoff: { type: 'exponential', delay: 1_000 },
    },
  })
  // Reconnection errors: the pipeline worker's 'error' event already reports an outage.
  requestsQueue.on('error', () => undefined)
  const work = options.work !== false
  const listen = options.listen !== false
  let provider: JsonRpcProvider | undefined
  let sender: TxSender | undefined
  let worker: ReturnType<typeof createPipelineWorker> | undefined
  let listener: RequestListener | undefined
  let stopOperations: (() => Promise<void>) | undefined

  async function enqueue(event: OracleRequestEvent): Promise<void> {
    const jobId = requestJobId(event.chainId, event.operator, event.requestId)
    const loaded = options.registry.bySpecId(event.specId)
    // Both at once: the run record is only created when absent (a request delivered again keeps its
    // run), and a worker that takes the job first creates the run itself.
    const [run] = await Promise.all([
      runs.create(event.requestId, { ...baseRecord(event, loaded), state: 'received' }),
      requestsQueue.add('request', toRequestPayload(event), { jobId }),
    ])
    const job = run.job ?? loaded?.name
    recordRequest(job, 'received')
    log.info({ requestId: event.requestId, job }, 'request received')
  }

  async function cancel(event: CancelRequestEvent): Promise<void> {
    const jobId = requestJobId(event.chainId, event.operator, event.requestId)
    const existing = await runs.get(event.requestId)
    await runs.update(event.requestId, {
      state: 'cancelled',
      reason: `cancelled by the requester in ${event.txHash}`,
    })
    // A waiting job can simply go; one already running meets the Operator's "Must have a valid requestId".
    const job = await requestsQueue.getJob(jobId)
    if (job && ((await job.isWaiting()) || (await job.isDelayed())))
      await job.remove().catch(() => undefined)
    recordRequest(existing?.job, 'cancelled', 'cancelled')
    log.info({ requestId: event.requestId, job: existing?.job }, 'request cancelled')
  }

  return {
    runs,
    registry: options.registry,
    requestsQueue,
    get listener() {
      return listener
    },
    get sender() {
      return sender
    },
    async start() {
      provider = (await connectProvider(options.rpcUrl, {
        chainId: options.chainId,
        pollingIntervalMs: options.pollIntervalMs,
      })) as JsonRpcProvider
      if (work) {
        await checkSendersAuthorised(provider, options.registry, options.keys)
        sender = createTxSender({
          rpcUrl: options.rpcUrl,
          chainId: options.chainId,
          keys: options.keys,
          redisUrl: options.redisUrl,
          prefix: options.prefix,
          confirmations: options.txConfirmations,
          broadcastIntervalMs: options.txBroadcastIntervalMs,
          pollIntervalMs: options.pollIntervalMs,
          // Each run waits for its own transaction: a key takes as many at once as it has runs.
          maxInFlight: options.concurrency ?? 64,
          // A crashed process's transactions are taken over after lock + stalled check: keep that
          // well inside a run's ethtx timeout (maxTaskDuration) (found by the crash test).
          lockDurationMs: Math.min(options.lockDurationMs ?? 15_000, 15_000),
          onError: (error) => log.error({ err: error.message }, 'transaction sender error'),
        })
        await sender.start()
        const txSender = sender
        const chainProvider = provider
        worker = createPipelineWorker({
          queueName: REQUESTS_QUEUE,
          connection: quietConnection(options.redisUrl),
          prefix: options.prefix,
          // A run holds its slot until its fulfilment is mined, so the slots bound the fulfilments in
          // flight: per key, or a second key would add nothing (measured: bench/runner.ts).
          concurrency: (options.concurrency ?? 64) * Math.max(1, options.keys.length),
          lockDurationMs: options.lockDurationMs ?? 30_000,
          registry: options.registry,
          runs,
          chainAccessFor: (_requestId, onSent, run) =>
            senderChainAccess(txSender, chainProvider, onSent, { retried: run.retried }),
          runOptions: options.runOptions,
          logger: options.logger,
        })
        worker.on('failed', (job, error) => {
          // Every line about a run carries its request id and job (the queue job id embeds the request id).
          const data = (job?.data ?? {}) as { requestId?: string; specId?: string }
          log.error(
            {
              requestId: data.requestId,
              job: options.registry.bySpecId(data.specId ?? '')?.name ?? '(unknown)',
              jobId: job?.id,
              err: error.message,
            },
            'request job failed',
          )
        })
        worker.on('error', (error) => log.error({ err: error.message }, 'pipeline worker error'))
        void worker.run()
      }
      if (listen) {
        listener = createRequestListener({
          provider,
          chainId: options.chainId,
          operators: options.registry.operators(),
          specIds: options.registry.specFilters(),
          redis,
          prefix: `${options.prefix}:listener`,
          onRequest: enqueue,
          onCancel: cancel,
          onError: (error) => log.error({ err: error.message }, 'listener error'),
          pollIntervalMs: options.pollIntervalMs,
          fromBlock: options.fromBlock,
        })
        await listener.start()
      }
      // Health checks and scrape-time metrics of this runner's parts (src/health/operate.ts).
      stopOperations = operateRunner(
        { requestsQueue, worker, sender, listener },
        {
          redisUrl: options.redisUrl,
          rpcUrl: options.rpcUrl,
          prefix: options.prefix,
          connection: redis,
        },
      )
      log.info(
        {
          jobs: options.registry.jobs.length,
          operators: options.registry.operators(),
          listen,
          work,
        },
        'runner started',
      )
    },
    async stop() {
      await stopOperations?.()
      await listener?.stop()
      await worker?.close()
      await sender?.close()
      await requestsQueue.close()
      provider?.destroy()
      redis.disconnect()
    },
  }
}

/**
 * A worker connection whose reconnection errors are left to BullMQ's own 'error' event. Auto-pipelined:
 * the job moves of the runs that finish in one tick leave in one write (its blocking copy is not).
 */
function quietConnection(redisUrl: string): Redis {
  const connection = createRedisConnection(redisUrl, 'worker', { enableAutoPipelining: true })
  connection.on('error', () => undefined)
  return connection
}
