import { Queue } from 'bullmq'
import type { JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import type { RequestListener } from '../chain/listener/index.ts'
import { EndpointPool, RPC_UNAVAILABLE } from '../chain/endpoints/pool.ts'
import { readBlockRoots } from '../chain/block-roots.ts'
import { PoolProvider } from '../chain/endpoints/pool-provider.ts'
import { startHeadWake, type HeadWake } from '../chain/endpoints/head-wake.ts'
import type { TxSender } from '../chain/sender/index.ts'
import { POOLED_MINED_BOUND_MS } from '../chain/pooled-transactions.ts'
import { errorCodeOf, errorKindOf, rootCauseFirst } from '../config/errors.ts'
import { isRedisUnavailable } from '../queue/connection.ts'
import { operateRunner } from '../health/operate.ts'
import type { JobRegistry } from './job-registry.ts'
import { createRequestIntake } from './request-intake.ts'
import { RunStore } from './run-record.ts'
import { createRequestsQueue } from './requests-queue.ts'
import type { RunnerOptions } from './runner-options.ts'
import { startListening } from './listening.ts'
import {
  createRecovery,
  type Reconciler,
  type Recovery,
  type RecoveryParts,
} from './recovery/index.ts'
import { pipelineRunOptions, startWorkPart, type WorkPart } from './work-part.ts'
import { startFluxPart, type FluxPart } from './flux/flux-part.ts'
import { startCronTicker, type CronTicker } from './cron-ticker.ts'

export { REQUESTS_QUEUE, requestsQueueName } from './requests-queue.ts'
export type { RunnerOptions } from './runner-options.ts'

export interface Runner {
  start(): Promise<void>
  /** Hands the runs in progress back to the queue and the keys to the next owner, then closes. */
  stop(): Promise<void>
  readonly runs: RunStore
  readonly registry: JobRegistry
  readonly listener: RequestListener | undefined
  readonly sender: TxSender | undefined
  readonly requestsQueue: Queue
}

/**
 * The node's part: the listener hands confirmed `OracleRequest` logs to the intake, which makes each
 * request one `requests` job; whichever runner process takes it runs the matching job spec, and its
 * ethtx goes to a sender key that process owns (each key is ordered by one process at a time). Every
 * process may listen and work at once.
 */
export function createRunner(options: RunnerOptions): Runner {
  const held = holdRunnerStores(options)
  const parts: RunnerParts = {}
  return {
    runs: held.runs,
    registry: options.registry,
    requestsQueue: held.requestsQueue,
    get listener() {
      return parts.listener
    },
    get sender() {
      return parts.work?.sender
    },
    async start() {
      await startRunnerParts(options, held, parts)
      held.log.info(
        {
          jobs: options.registry.jobs.length,
          operators: options.registry.operators(),
          listen: options.listen !== false,
          work: options.work !== false,
        },
        'runner started',
      )
    },
    async stop() {
      await stopRunnerParts(parts)
      await held.requestsQueue.close()
      parts.provider?.destroy()
      await held.pool.close()
      held.redis.disconnect()
    },
  }
}

/** What a runner holds from its creation to its stop: its records, its queue, the chain's pool. */
interface RunnerStores {
  log: RunnerOptions['logger']
  redis: Redis
  runs: RunStore
  requestsQueue: Queue
  pool: EndpointPool
  /** Redis's clock: it stamps each request's job and measures its wait, whichever hosts add and take it. */
  clock: ReturnType<RunnerOptions['connections']['clock']>
  intake: ReturnType<typeof createRequestIntake>
  chainError: ReturnType<typeof chainErrorReporter>
}

function holdRunnerStores(options: RunnerOptions): RunnerStores {
  const log = options.logger.child({ component: 'runner' })
  const { connections } = options
  // Auto-pipelined: the run updates of many concurrent runs leave in one write per tick.
  const redis: Redis = connections.redis('worker', 'runner records', { enableAutoPipelining: true })
  const runs = new RunStore(redis, `${options.prefix}:runner`, options.chainId)
  const { prefix, chainId, registry } = options
  const requestsQueue = createRequestsQueue(connections, prefix, chainId, options.retry)
  const clock = connections.clock(prefix)
  return {
    log,
    redis,
    runs,
    requestsQueue,
    // Every read and broadcast goes through the chain's endpoint pool, which reports each
    // endpoint's outage as one line down, one a minute, one back (src/config/dependency-health.ts).
    pool: createEndpointPool(options),
    clock,
    intake: createRequestIntake({ runs, requestsQueue, registry, clock, log }),
    chainError: chainErrorReporter(log, connections),
  }
}

/** What a runner starts, each set as it starts, so a stop after a start that failed stops those. */
interface RunnerParts {
  provider?: JsonRpcProvider
  work?: WorkPart
  flux?: FluxPart
  recovery?: Recovery
  listener?: RequestListener
  reconciler?: Reconciler
  headWake?: HeadWake
  stopOperations?: () => Promise<void>
  cronTicker?: CronTicker
}

/**
 * Starts the parts in the order each needs the last: the pool and its provider; the work part (the
 * sender's keys and the pipeline worker); recovery, which adopts Redis's generation before the
 * listener writes markers of it; the listener and its reconciler, woken by new heads; the health
 * checks and metrics of them all.
 */
async function startRunnerParts(
  options: RunnerOptions,
  held: RunnerStores,
  parts: RunnerParts,
): Promise<void> {
  const { pool, redis, runs, log } = held
  await pool.start()
  const provider = (parts.provider = new PoolProvider(pool, options.pollIntervalMs))
  if (options.work !== false)
    parts.work = await startWorkPart(
      withChainReads(options, provider),
      { provider, pool },
      runs,
      log,
      held.chainError('transaction sender'),
    )
  // The monitor's lines name their own component: a child of `log` would say `component` twice.
  if (parts.work) parts.flux = startFlux(options, { provider, redis }, parts.work.sender)
  parts.cronTicker = await startCronTicker(
    held.requestsQueue,
    options.registry,
    options.chainId,
    held.clock,
    log,
  )
  const recovery = (parts.recovery = recoveryOf(
    options,
    { redis, provider, log },
    parts.work?.sender,
  ))
  await recovery.adopt()
  if (options.listen !== false)
    Object.assign(
      parts,
      await startListening({
        options,
        provider,
        redis,
        runs,
        intake: held.intake,
        recovery,
        clock: held.clock,
        onError: held.chainError('listener'),
        log,
      }),
    )
  if (parts.listener)
    parts.headWake = await startHeadWake(
      options.chain.endpoints.filter((endpoint) => !endpoint.sendOnly).map(({ url }) => url),
      options.chainId,
      wakeOnHead(pool, parts.listener),
      log,
    )
  await recovery.watch(parts.listener)
  // Health checks and scrape-time metrics of this runner's parts (src/health/operate.ts).
  parts.stopOperations = operateRunner(
    {
      requestsQueue: held.requestsQueue,
      worker: parts.work?.worker,
      sender: parts.work?.sender,
      listener: parts.listener,
    },
    {
      redisUrl: options.connections.redisUrl,
      chain: { chainId: options.chainId, pool },
      prefix: options.prefix,
      connection: redis,
      clock: held.clock,
    },
  )
}

/** Stops the parts in reverse: nothing new comes in before what is in progress is handed over. */
async function stopRunnerParts(parts: RunnerParts): Promise<void> {
  parts.cronTicker?.stop()
  // Before the sender closes: a submission in progress stops waiting, the sender watches what it sent.
  await parts.flux?.stop()
  await parts.stopOperations?.()
  await parts.recovery?.stop()
  await parts.reconciler?.stop()
  await parts.headWake?.stop()
  await parts.listener?.stop()
  // The runs in progress go back to the queue, then the sender hands its keys over.
  await parts.work?.close()
}

/**
 * The chain's flux monitor: the fluxmonitor jobs of the chain (at every reload too), their values
 * from the same pipelines as every run, their submissions through the node's sender.
 */
function startFlux(
  options: RunnerOptions,
  { provider, redis }: { provider: JsonRpcProvider; redis: Redis },
  sender: TxSender,
): FluxPart {
  return startFluxPart({
    chainId: options.chainId,
    provider,
    sender,
    registry: options.registry,
    runOptions: pipelineRunOptions(withChainReads(options, provider)),
    log: options.logger,
    records: { redis, prefix: options.prefix },
  })
}

/**
 * Where a failure of the listener or the sender is told: a fault of ours as an error line; Redis away
 * to Redis's outage report (one line down, one a minute, one back); an RPC endpoint away was told by
 * the pool already, so a debug line. Told apart by the error's code and kind: a refused connection
 * to the node and one to Redis look the same underneath.
 */
function chainErrorReporter(
  log: RunnerOptions['logger'],
  connections: RunnerOptions['connections'],
): (what: string) => (error: Error) => void {
  return (what) => (error) => {
    const kind = errorKindOf(error)
    if (errorCodeOf(error) === RPC_UNAVAILABLE)
      log.debug({ err: rootCauseFirst(error) }, `${what}: the chain did not answer`)
    else if (isRedisUnavailable(error)) connections.redisHealth.failed(error)
    else if (kind === 'unavailable' || kind === 'timeout')
      log.debug({ err: rootCauseFirst(error) }, `${what}: the chain did not answer`)
    else log.error({ err: rootCauseFirst(error) }, `${what} error`)
  }
}

/** The chain's endpoints, each reported as a dependency of its own (named by its setting and host:port). */
function createEndpointPool(options: RunnerOptions): EndpointPool {
  const { chain, chainId, connections } = options
  return new EndpointPool({
    chainId,
    label: chain.label === 'the RPC_URL chain' ? `chain ${chainId}` : chain.label,
    endpoints: chain.endpoints,
    healthOf: (endpoint) =>
      connections.dependency(
        `the RPC endpoint of chain ${chainId}`,
        endpoint.setting,
        endpoint.url,
      ),
    probeIntervalMs: Math.max(options.pollIntervalMs, ENDPOINT_PROBE_MIN_MS),
    maxLagBlocks: chain.maxLagBlocks,
    maxResponseBytes: options.rpcMaxResponseBytes,
    pollIntervalMs: options.pollIntervalMs,
  })
}

/**
 * At a notified head: the header is the chain's latest block for every reader of the pool (the scan
 * it wakes reads no head), and the listener scans.
 */
function wakeOnHead(pool: EndpointPool, listener: RequestListener): (header: unknown) => void {
  return (header) => {
    if (header) pool.noteLatestBlock(header)
    listener.wake()
  }
}

/** Endpoints are asked for their heads at most this often (more often on a chain polled less often). */
const ENDPOINT_PROBE_MIN_MS = 1_000

/** The runner's options with the run's chain reads: $(jobRun.block*Root), only for jobs that use them. */
function withChainReads(options: RunnerOptions, provider: JsonRpcProvider): RunnerOptions {
  return {
    ...options,
    runOptions: {
      ...options.runOptions,
      blockRoots: (blockHash) => readBlockRoots(provider, blockHash),
    },
  }
}

/**
 * Recovery from a Redis that lost its state (recovery/index.ts); it reads the chain for open requests
 * once what the node's pool holds of the Operators' senders (this process's keys among them) is mined.
 */
function recoveryOf(
  options: RunnerOptions,
  parts: Pick<RecoveryParts, 'redis' | 'provider' | 'log'>,
  sender: TxSender | undefined,
): Recovery {
  return createRecovery({
    ...parts,
    prefix: options.prefix,
    operators: options.registry.operators(),
    checkEveryMs: options.pollIntervalMs,
    logRangeBlocks: options.logRangeBlocks,
    pooled: {
      keys: sender?.addresses ?? [],
      forwarder: options.runOptions?.forwarder,
      boundMs: POOLED_MINED_BOUND_MS,
      pollIntervalMs: options.pollIntervalMs,
    },
  })
}
