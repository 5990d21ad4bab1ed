import type { JsonRpcProvider } from 'ethers'
import type { Logger } from '../config/logger.ts'
import { bridgeUrlSetting } from '../config/settings.ts'
import { rootCauseFirst } from '../config/errors.ts'
import { createTxSender, type TxSender } from '../chain/sender/index.ts'
import { failedReasonError } from '../queue/failed-reason.ts'
import { createPipelineWorker, runRequest, type PipelineWorkerOptions } from './pipeline-worker.ts'
import type { RunStore } from './run-record.ts'
import { checkSendersAuthorised } from './sender-authorisation.ts'
import { senderChainAccess } from './sender-chain-access.ts'
import { REQUEST_JOB_OPTIONS, requestsQueueName } from './requests-queue.ts'
import type { EndpointPool } from '../chain/endpoints/pool.ts'
import type { RunnerOptions } from './runner-options.ts'
import { RequesterAdmission } from './admission.ts'
import { observeQueueWait } from '../metrics/index.ts'
import { DirectRuns } from './direct/direct-runs.ts'
import { LeaseStore } from './direct/lease-store.ts'

export type PipelineWorker = ReturnType<typeof createPipelineWorker>

/**
 * The working half of a runner: the transaction sender, the runs this process claimed itself (the
 * listener's requests, under a lease), and the pipeline worker of the `requests` queue (requests a
 * process held too many of to claim, a listen-only process's, and those queued before an upgrade).
 */
export interface WorkPart {
  sender: TxSender
  worker: PipelineWorker
  direct: DirectRuns
}

/**
 * Checks the keys are authorised senders, starts the transaction sender, then the `requests` worker
 * whose runs send through it.
 */
export async function startWorkPart(
  options: RunnerOptions,
  chain: { provider: JsonRpcProvider; pool: EndpointPool },
  runs: RunStore,
  log: Logger,
  reportChainError: (error: Error) => void,
): Promise<WorkPart> {
  const { provider, pool } = chain
  await checkSendersAuthorised(provider, options.registry, options.keys)
  const { gas } = options.chain
  const sender = createTxSender({
    rpcUrl: pool.readOrder()[0]?.url ?? '',
    pool,
    provider,
    chainId: options.chainId,
    rpcMaxResponseBytes: options.rpcMaxResponseBytes,
    keys: options.keys,
    redisUrl: options.connections.redisUrl,
    connections: options.connections,
    prefix: options.prefix,
    confirmations: options.txConfirmations,
    gasLimit: gas.limit,
    priorityFeeWei: gas.priorityFeeWei,
    maxFeePerGasCapWei: gas.maxFeePerGasCapWei,
    bumpAfterBlocks: gas.bumpAfterBlocks,
    broadcastIntervalMs: options.txBroadcastIntervalMs,
    pollIntervalMs: options.pollIntervalMs,
    // Each run waits for its own transaction: a key takes as many at once as it has runs.
    maxInFlight: options.concurrency,
    // A crashed process's queued transactions are taken over after lock + stalled check, and the
    // nonce of one it ran directly is leased this long: keep that well inside a run's ethtx timeout
    // (maxTaskDuration) (found by the crash test).
    lockDurationMs: Math.min(options.lockDurationMs, 15_000),
    // On shutdown a transaction still waiting for its receipt is handed back (its run is retried and
    // sends its stored attempt again, elsewhere) soon enough for the process to be gone within 2 s.
    closeTimeoutMs: 1_000,
    // An RPC node away is one line when it goes and one when it is back (DependencyHealth).
    onError: reportChainError,
  })
  await sender.start()
  const pipeline: PipelineWorkerOptions = {
    queueName: requestsQueueName(options.chainId),
    // Auto-pipelined: the job moves of the runs that finish in one tick leave in one write (its
    // blocking copy is not).
    connection: options.connections.redis('worker', 'pipeline worker', {
      enableAutoPipelining: true,
    }),
    prefix: options.prefix,
    // A run holds its slot until its fulfilment is mined, so the slots bound the fulfilments in
    // flight: per key, or a second key would add nothing (measured: bench/runner.ts).
    concurrency: options.concurrency * Math.max(1, options.keys.length),
    lockDurationMs: options.lockDurationMs,
    registry: options.registry,
    runs,
    chainAccessFor: (_requestId, onSent, run) =>
      senderChainAccess(sender, provider, onSent, { retried: run.retried }),
    runOptions: {
      ...options.runOptions,
      // An adapter away is one line when it goes, one a minute, one when back (not a line per run).
      bridgeReach: (name, url) =>
        options.connections.dependency(`bridge ${name}`, bridgeUrlSetting(name), url),
    },
    admission: requesterAdmission(options),
    outputMaxChars: options.requestPolicy?.outputMaxChars,
    logger: options.logger,
  }
  const worker = createPipelineWorker(pipeline)
  const direct = startDirectRuns(options, pipeline, () => worker.concurrency, log)
  worker.on('failed', (job, error) => {
    // Every line about a run carries its request id and job (the queue job id embeds the request id).
    const data = (job?.data ?? {}) as { requestId?: string; specId?: string }
    const failure = failedReasonError(job?.failedReason ?? error.message)
    // A run handed back to the queue (its bridge away) runs again after its backoff: the outage is
    // told by the bridge's own report, and only a run's last failure is an error line.
    const willRetry = job !== undefined && job.attemptsMade < (job.opts.attempts ?? 1)
    log[willRetry && failure.retryable ? 'debug' : 'error'](
      {
        requestId: data.requestId,
        job: options.registry.bySpecId(data.specId ?? '')?.name ?? '(unknown)',
        jobId: job?.id,
        kind: failure.kind,
        err: rootCauseFirst(failure),
      },
      'request job failed',
    )
  })
  options.connections.watch(worker, 'pipeline worker')
  void worker.run()
  return { sender, worker, direct }
}

/** The runs of requests this process claims itself, with the same options as the worker's runs. */
function startDirectRuns(
  options: RunnerOptions,
  pipeline: PipelineWorkerOptions,
  concurrency: () => number,
  log: Logger,
): DirectRuns {
  const backoff = REQUEST_JOB_OPTIONS.backoff
  const direct = new DirectRuns({
    // Auto-pipelined: the claims and ends of the runs of one tick leave in one write.
    store: new LeaseStore(
      options.connections.redis('worker', 'runner leases', { enableAutoPipelining: true }),
      options.prefix,
      options.chainId,
    ),
    leaseMs: options.lockDurationMs,
    concurrency,
    attempts: REQUEST_JOB_OPTIONS.attempts ?? 1,
    backoffMs: typeof backoff === 'object' ? (backoff.delay ?? 1_000) : (backoff ?? 1_000),
    run: (request, delivery) => runRequest(request, { ...pipeline, ...delivery }),
    // The wait a request's job had in the queue is, for a held one, its wait for a slot here.
    onStart: (heldAt) =>
      observeQueueWait(
        'requests',
        { timestamp: heldAt, processedOn: Date.now() },
        String(options.chainId),
      ),
    jobName: (request) => options.registry.bySpecId(request.specId)?.name ?? '(unknown)',
    log,
  })
  direct.start()
  return direct
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
    // A crashed process's slots come back about when its requests are taken over (RUNNER_LOCK_MS).
    leaseMs: Math.max(options.lockDurationMs, 5_000),
  })
}
