import type { JsonRpcProvider } from 'ethers'
import type { Logger } from '../config/logger.ts'
import { bridgeUrlSetting } from '../config/settings.ts'
import { errorKindOf, FeedrunnerError, isRetryable, rootCauseFirst } from '../config/errors.ts'
import { createTxSender, type TxSender } from '../chain/sender/index.ts'
import type { PipelineWorkerOptions } from './pipeline-worker.ts'
import { createPipelineWorker } from './requests-worker.ts'
import type { RunStore } from './run-record.ts'
import { checkSendersAuthorised } from './sender-authorisation.ts'
import { senderChainAccess } from './sender-chain-access.ts'
import { requestsQueueName } from './requests-queue.ts'
import type { EndpointPool } from '../chain/endpoints/pool.ts'
import type { RunnerOptions } from './runner-options.ts'
import type { RunOptions } from '../pipeline/index.ts'
import { RequesterAdmission } from './admission.ts'
import { leasesFromLock } from './retry-policy.ts'

export type PipelineWorker = ReturnType<typeof createPipelineWorker>

/**
 * The working half of a runner: the transaction sender (this process's share of the keys) and the
 * worker of the chain's `requests` queue, which runs as many requests at once as RUNNER_CONCURRENCY
 * times the keys this process owns, and none while it owns none.
 */
export interface WorkPart {
  sender: TxSender
  worker: PipelineWorker
  /** Stops the runs in progress (they go back to the queue) and closes the worker, then the sender. */
  close(): Promise<void>
}

/** Why the runs in progress stop when the process closes: retryable, so each request goes back. */
export class RunnerClosingError extends FeedrunnerError {
  override readonly name = 'RunnerClosingError'
  constructor() {
    super('the runner process is closing: the request goes back to the queue', {
      kind: 'unavailable',
    })
  }
}

/**
 * Checks the keys are authorised senders, starts the transaction sender (it takes this process's
 * share of the keys), then the `requests` worker, sized by the keys owned here as they change.
 */
export async function startWorkPart(
  options: RunnerOptions,
  chain: { provider: JsonRpcProvider; pool: EndpointPool },
  runs: RunStore,
  log: Logger,
  reportChainError: (error: Error) => void,
): Promise<WorkPart> {
  await checkSendersAuthorised(chain.provider, options.registry, options.keys)
  const sender = createSender(options, chain, log, reportChainError)
  const stopping = new AbortController()
  const worker = createPipelineWorker(
    pipelineOptions(options, chain.provider, runs, sender, stopping.signal),
  )
  logRunFailures(worker, options, log)
  options.connections.watch(worker, 'pipeline worker')
  // The worker runs once this process owns a key (sizeWorkerByKeys starts and stops it).
  await sizeWorkerByKeys(worker, sender, options.concurrency)
  await sender.start()
  return {
    sender,
    worker,
    async close() {
      stopping.abort(new RunnerClosingError())
      // The runs end at once (their tasks fail retryably, their requests go back to the queue), so
      // the worker closes quickly; then the sender hands its keys over within its close timeout.
      await worker.close()
      await sender.close()
    },
  }
}

/** The `requests` worker's settings: this chain's queue, its sender for the chain, its bounds. */
function pipelineOptions(
  options: RunnerOptions,
  provider: JsonRpcProvider,
  runs: RunStore,
  sender: TxSender,
  signal: AbortSignal,
): PipelineWorkerOptions {
  const clock = options.connections.clock(options.prefix)
  return {
    queueName: requestsQueueName(options.chainId),
    // Auto-pipelined: the job moves of the runs that finish in one tick leave in one write (its
    // blocking copy is not).
    connection: options.connections.redis('worker', 'pipeline worker', {
      enableAutoPipelining: true,
    }),
    prefix: options.prefix,
    concurrency: 1,
    lockDurationMs: options.lockDurationMs,
    registry: options.registry,
    runs,
    chainAccessFor: (request, onSent) =>
      senderChainAccess(sender, provider, request, {
        onSubmit: onSent,
        logRangeBlocks: options.logRangeBlocks,
      }),
    runOptions: pipelineRunOptions(options),
    admission: requesterAdmission(options),
    outputMaxChars: options.requestPolicy?.outputMaxChars,
    logger: options.logger,
    signal,
    maxCrashes: options.maxCrashes,
    chainTime: () => sender.chainTime(),
    ticks: {
      redis: options.connections.redis('worker', 'cron ticks', { enableAutoPipelining: true }),
      now: () => clock.now(),
      chain: { provider, logRangeBlocks: options.logRangeBlocks },
    },
    transactionOut: async (keys) =>
      (await Promise.all(keys.map((key) => sender.bound(key)))).some(Boolean),
  }
}

/** One line per failed run, with its request id and job; a failure that will be retried is debug. */
function logRunFailures(worker: PipelineWorker, options: RunnerOptions, log: Logger): void {
  worker.on('failed', (job, error) => {
    // Every line about a run carries its request id and job (the queue job id embeds the request id).
    const data = (job?.data ?? {}) as { requestId?: string; specId?: string }
    // A run handed back to the queue runs again after its backoff: only its last failure is an error.
    const willRetry =
      job !== undefined && job.attemptsMade < (job.opts.attempts ?? 1) && isRetryable(error)
    log[willRetry ? 'debug' : 'error'](
      {
        requestId: data.requestId,
        job: options.registry.bySpecId(data.specId ?? '')?.name ?? '(unknown)',
        jobId: job?.id,
        kind: errorKindOf(error),
        err: rootCauseFirst(error),
      },
      'request job failed',
    )
  })
}

/** What every run of the chain's pipelines gets: the runner's run options and the bridges' reach. */
export function pipelineRunOptions(options: RunnerOptions): Partial<RunOptions> {
  return {
    ...options.runOptions,
    // An adapter away is one line when it goes, one a minute, one when back (not a line per run).
    bridgeReach: (name, url) =>
      options.connections.dependency(`bridge ${name}`, bridgeUrlSetting(name), url),
  }
}

function createSender(
  options: RunnerOptions,
  chain: { provider: JsonRpcProvider; pool: EndpointPool },
  log: Logger,
  reportChainError: (error: Error) => void,
): TxSender {
  const { gas } = options.chain
  return createTxSender({
    rpcUrl: chain.pool.readOrder()[0]?.url ?? '',
    pool: chain.pool,
    provider: chain.provider,
    chainId: options.chainId,
    rpcMaxResponseBytes: options.rpcMaxResponseBytes,
    keys: options.keys,
    redisUrl: options.connections.redisUrl,
    connections: options.connections,
    prefix: options.prefix,
    confirmations: options.txConfirmations,
    finalityDepth: options.finalityDepth,
    gasLimit: gas.limit,
    priorityFeeWei: gas.priorityFeeWei,
    maxFeePerGasCapWei: gas.maxFeePerGasCapWei,
    bumpAfterBlocks: gas.bumpAfterBlocks,
    broadcastIntervalMs: options.txBroadcastIntervalMs,
    pollIntervalMs: options.pollIntervalMs,
    keyLeaseMs: leasesFromLock(options.lockDurationMs).keyLeaseMs,
    // On shutdown a transaction still waiting for its receipt is handed over (its record stays in
    // Redis, the key's next owner watches it) soon enough for the process to be gone within 2 s.
    closeTimeoutMs: 1_000,
    logger: log,
    // An RPC node away is one line when it goes and one when it is back (DependencyHealth).
    onError: reportChainError,
  })
}

/**
 * RUNNER_CONCURRENCY is per sender key: the worker runs that many requests for each key this process
 * owns and may give work to, and takes none while it has none (another process owns the keys; this
 * one stands by to take them over).
 */
async function sizeWorkerByKeys(
  worker: PipelineWorker,
  sender: TxSender,
  perKey: number,
): Promise<void> {
  let sizing = Promise.resolve()
  const resize = async () => {
    const { available } = sender.ownership()
    if (available === 0) {
      if (!worker.isPaused()) await worker.pause(true)
      return
    }
    worker.concurrency = perKey * available
    // resume() starts a worker that never ran, and wakes one that was paused.
    if (worker.isPaused() || !worker.isRunning()) await worker.resume()
  }
  sender.onOwnershipChange(() => {
    sizing = sizing.then(resize).catch(() => undefined)
  })
  await resize()
}

/** The per-requester bounds, counted in Redis so they hold across every runner process; none when off. */
function requesterAdmission(options: RunnerOptions): RequesterAdmission | undefined {
  const limits = options.requestPolicy?.requesterLimits
  if (!limits || (limits.maxConcurrentRuns <= 0 && limits.maxRequestsPerMinute <= 0))
    return undefined
  return new RequesterAdmission(limits, {
    redis: options.connections.redis('worker', 'requester limits', { enableAutoPipelining: true }),
    prefix: `${options.prefix}:runner`,
    chainId: options.chainId,
    leaseMs: leasesFromLock(options.lockDurationMs).admissionLeaseMs,
  })
}
