import type { Logger } from '../config/logger.ts'
import { required, type Settings } from '../config/settings.ts'
import { fetchChainId } from '../chain/provider.ts'
import { pipelineLimits, type HostResolver } from '../pipeline/index.ts'
import { Connections } from '../queue/connections.ts'
import { loadJobRegistry } from './job-registry.ts'
import { createRunner, type Runner } from './runner.ts'

/** The sender keys of this node: NODE_PRIVATE_KEYS when set, else NODE_PRIVATE_KEY. */
export function senderKeys(settings: Settings): string[] {
  if (settings.NODE_PRIVATE_KEYS && settings.NODE_PRIVATE_KEYS.length > 0)
    return settings.NODE_PRIVATE_KEYS
  return [required(settings, 'NODE_PRIVATE_KEY', 'the runner (it signs the fulfilments)')]
}

export interface RunnerFromSettingsOptions {
  listen?: boolean
  work?: boolean
  /** Environment the pipeline's bridge and http tasks read (BRIDGE_<NAME>_URL). */
  env?: NodeJS.ProcessEnv
  /** The process's connections (its composition root's); a runner started without them has its own. */
  connections?: Connections
  /** How the http task's guard resolves names (the hostile-source test injects a rebinding one). */
  resolveHost?: HostResolver
}

/** Builds and starts a runner from the environment's settings and the specs in JOBS_DIR. */
export async function startRunnerFromSettings(
  settings: Settings,
  logger: Logger,
  options: RunnerFromSettingsOptions = {},
): Promise<Runner> {
  const rpcUrl = required(settings, 'RPC_URL', 'the runner')
  const keys = senderKeys(settings)
  // Before any connection is made: a node that does not answer is named by RPC_URL and host:port.
  const chainId = await fetchChainId(rpcUrl)
  // One chain today (RPC_URL's); a multi-chain configuration passes all its chain ids here.
  const registry = await loadJobRegistry(settings.JOBS_DIR, [chainId])
  for (const notice of registry.notices) logger.warn({ chainId }, notice)
  if (registry.jobs.length === 0)
    logger.warn({ dir: settings.JOBS_DIR, chainId }, 'no job spec in JOBS_DIR is for this chain')
  const ownConnections = options.connections ? undefined : new Connections(settings, logger)
  const connections = options.connections ?? (ownConnections as Connections)
  const runner = createRunner({
    rpcUrl,
    chainId,
    connections,
    prefix: settings.QUEUE_PREFIX,
    keys,
    registry,
    logger,
    concurrency: settings.RUNNER_CONCURRENCY,
    lockDurationMs: settings.RUNNER_LOCK_MS,
    pollIntervalMs: settings.CHAIN_POLL_INTERVAL_MS,
    fromBlock: settings.RUNNER_FROM_BLOCK,
    reconcileIntervalMs: settings.RUNNER_RECONCILE_INTERVAL_MS,
    txConfirmations: settings.TX_CONFIRMATIONS,
    txBroadcastIntervalMs: settings.TX_BROADCAST_INTERVAL_MS,
    rpcMaxResponseBytes: settings.RPC_MAX_RESPONSE_BYTES,
    runOptions: {
      env: options.env ?? process.env,
      limits: pipelineLimits(settings),
      resolveHost: options.resolveHost,
    },
    requestPolicy: {
      requesterLimits: {
        maxConcurrentRuns: settings.REQUESTER_MAX_CONCURRENT_RUNS,
        maxRequestsPerMinute: settings.REQUESTER_MAX_REQUESTS_PER_MINUTE,
      },
      outputMaxChars: settings.TASK_OUTPUT_MAX_CHARS,
    },
    listen: options.listen,
    work: options.work,
  })
  // A runner that could not start (an RPC node away, a sender key the Operator does not know) lets go
  // of the connections it made.
  if (ownConnections) {
    const stopRunner = runner.stop.bind(runner)
    runner.stop = async () => {
      await stopRunner()
      await ownConnections.close()
    }
  }
  await runner.start().catch(async (error: unknown) => {
    await runner.stop().catch(() => undefined)
    throw error
  })
  return runner
}
