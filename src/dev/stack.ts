import { randomBytes } from 'node:crypto'
import { Wallet } from 'ethers'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startAdapter, type RunningAdapter } from '../adapter/adapter.ts'
import { startFetchWorkers, type RunningFetchWorkers } from '../adapter/workers.ts'
import { createLogger, type Logger } from '../config/logger.ts'
import { mountOperations } from '../dashboard/mount.ts'
import { allFamilyUrls, parseSettings, type Settings } from '../config/settings.ts'
import {
  createFeedServer,
  type FeedServer,
  type FeedServerIntercept,
} from '../feeds/server/index.ts'
import type { DemoTokens } from '../feeds/server/blockchain/demo-tokens.ts'
import { Connections } from '../queue/connections.ts'
import { scanKeyBatches } from '../queue/scan-keys.ts'
import { HEALTH_PATHS, METRICS_PATH, registerMetricsRoute } from '../health/routes.ts'
import { collectProcessMetrics } from '../metrics/registry.ts'
import { startRunnerFromSettings, type Runners } from '../runner/start.ts'
import {
  registerRunsRoute,
  runsRouteOptions,
  type ChainRuns,
  type RunnersOf,
} from '../runner/webhook.ts'
import type { DevContracts } from './deploy.ts'
import { onPreferredPort } from './ports.ts'
import type { PushContracts } from './push-feeds.ts'
import { stackChain, type StackChain, type Stops } from './stack-chain.ts'
import { claimKey, claimPrefix } from './prefix-claim.ts'
import {
  redisAnswers,
  redisServerInstalled,
  startPrivateRedis,
  type PrivateRedis,
} from './redis.ts'

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** The blockchain id under which the local feed service answers from the dev chain. */
export const DEV_BLOCKCHAIN_ID = 'local'

export interface DevStackOptions {
  /** Environment to take REDIS_URL, RPC_URL, JOBS_DIR, LOG_LEVEL, ... from (default process.env). */
  env?: NodeJS.ProcessEnv
  /** Key prefix of every queue and record; a fresh dev chain clears what an earlier one left under it. */
  prefix?: string
  /** Sender keys (default: anvil's account 1); each becomes an authorised sender of the Operator. */
  nodeKeys?: readonly string[]
  /** The feed service key (default: a random one, never printed). */
  feedKey?: string
  /** Fault hook of the local feed service (fault tests). */
  feedIntercept?: FeedServerIntercept
  /** Ports to use when they are free (the dev command's well-known ones); otherwise any free port. */
  preferredPorts?: { anvil?: number; adapter?: number; feeds?: number }
  /**
   * Deploy the contracts of the push jobs in jobs/push/ (cron, webhook, fluxmonitor) and run them:
   * JOBS_DIR, unless the environment sets it, is then `jobs,jobs/push` (else `jobs`).
   */
  pushJobs?: boolean
  /** Start the runner (default true). */
  runner?: boolean
  /** Delete every key under the prefix when the stack stops (a demo leaves the Redis as it found it). */
  clearPrefixOnStop?: boolean
  /**
   * A redis-server of the stack's own even when one answers at REDIS_URL (REDIS_URL was not set: the
   * default address may be another stack's Redis). Without redis-server installed, REDIS_URL is used.
   */
  ownRedis?: boolean
  /** What the stack's claim on its queue prefix names as its checkout (default: this one). */
  checkout?: string
  logger?: Logger
}

export interface DevStack {
  readonly settings: Settings
  /** The environment every part was started with (what `feedrunner start` would need). */
  readonly env: Record<string, string>
  readonly redisUrl: string
  readonly rpcUrl: string
  readonly contracts: DevContracts
  readonly demoTokens?: DemoTokens
  /** The contracts of the push jobs in jobs/push/ (pushJobs). */
  readonly pushContracts?: PushContracts
  readonly feedServer: FeedServer
  readonly adapter: RunningAdapter
  readonly workers: RunningFetchWorkers
  readonly runner?: Runners
  /** Prometheus text of the stack's process, on the adapter's port. */
  readonly metricsUrl: string
  /** Readiness (503 naming what is down) on the adapter's port; liveness is at /live. */
  readonly healthUrl: string
  /** Stops everything this stack started, newest first. */
  stop(): Promise<void>
}

/**
 * The whole feedrunner on one machine: Redis (REDIS_URL, or a private redis-server), a dev chain
 * (anvil, or RPC_URL) with LinkToken, Operator and FeedConsumer at fixed addresses, the local feed
 * service over the shipped data set and the dev chain, the adapter, fetch workers and the runner.
 */
export async function startDevStack(options: DevStackOptions = {}): Promise<DevStack> {
  const env = options.env ?? process.env
  const stops: Stops = []
  const stop = async () => {
    for (const stopPart of stops.reverse()) await stopPart().catch(() => undefined)
  }
  try {
    const bootSettings = parseSettings(env)
    const logger = options.logger ?? createLogger(bootSettings, 'feedrunner-dev')
    const redisUrl = await redisForStack(bootSettings.REDIS_URL, logger, stops, options.ownRedis)
    // Every Redis connection of the stack's parts, closed after them (stops run newest first).
    const connections = new Connections({ ...bootSettings, REDIS_URL: redisUrl }, logger)
    stops.push(() => connections.close())
    const chain = await stackChain(
      {
        rpcUrl: bootSettings.RPC_URL,
        preferredPort: options.preferredPorts?.anvil,
        nodeKeys: options.nodeKeys,
        push: options.pushJobs,
      },
      stops,
    )
    const prefix = await stackPrefix(env, options, { connections, redisUrl, logger }, chain, stops)
    const feedKey = options.feedKey ?? `dev-${randomBytes(12).toString('hex')}`
    const feeds = await startStackFeeds(options, chain.nodeKeys, feedKey, chain.rpcUrl, stops)
    const stackEnv = stackEnvironment(env, bootSettings, {
      redisUrl,
      prefix,
      feedKey,
      ...chain,
      ...feeds,
    })
    const settings = parseSettings({ ...env, ...stackEnv })
    const served = await startServingParts(
      settings,
      env,
      stackEnv,
      { options, connections, logger },
      stops,
    )
    return {
      settings: { ...settings, EA_PORT: served.adapter.port },
      env: stackEnv,
      redisUrl,
      rpcUrl: chain.rpcUrl,
      contracts: chain.contracts,
      demoTokens: chain.demoTokens,
      pushContracts: chain.pushContracts,
      feedServer: feeds.feedServer,
      ...served,
      metricsUrl: `${served.adapter.url}${METRICS_PATH}`,
      healthUrl: `${served.adapter.url}${HEALTH_PATHS.ready}`,
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}

/**
 * The queue prefix, claimed for this stack before anything is written or cleared under it (it must
 * not be another stack's); on a new chain it is cleared of what an earlier chain left.
 */
async function stackPrefix(
  env: NodeJS.ProcessEnv,
  options: DevStackOptions,
  redis: { connections: Connections; redisUrl: string; logger: Logger },
  chain: StackChain,
  stops: Stops,
): Promise<string> {
  const { connections, logger } = redis
  const prefix = options.prefix ?? (env.QUEUE_PREFIX || 'feedrunner-dev')
  const claim = await claimPrefix(
    connections.redis('worker', 'dev prefix claim'),
    prefix,
    options.checkout ?? projectRoot,
    redis.redisUrl,
    () => logger.error({ prefix }, 'another dev stack took this queue prefix'),
  )
  stops.push(() => claim.release())
  // Checkpoints and run records of an earlier dev chain would point at blocks this chain never had.
  if (!chain.contracts.reused) await clearPrefix(connections, prefix, claimKey(prefix))
  // Runs after every part that writes under the prefix has stopped (stops run newest first).
  if (options.clearPrefixOnStop) stops.push(() => clearPrefix(connections, prefix))
  return prefix
}

/** The environment of the serving parts: the stack's Redis, chain, keys and feed service. */
function stackEnvironment(
  env: NodeJS.ProcessEnv,
  bootSettings: Settings,
  stack: StackChain & { redisUrl: string; prefix: string; feedKey: string; feedUrl: string },
): Record<string, string> {
  const { nodeKeys, contracts } = stack
  return {
    REDIS_URL: stack.redisUrl,
    QUEUE_PREFIX: stack.prefix,
    RPC_URL: stack.rpcUrl,
    NODE_PRIVATE_KEY: nodeKeys[0] as string,
    NODE_PRIVATE_KEYS: nodeKeys.join(','),
    // The dev chain's keys sign here, whatever a production .env says about keystores.
    KEYSTORE_DIR: '',
    ...allFamilyUrls(stack.feedUrl),
    FEED_API_KEY: stack.feedKey,
    ...(env.EA_PORT ? { EA_PORT: String(Number(env.EA_PORT)) } : {}),
    JOBS_DIR: env.JOBS_DIR || stackJobsDir(stack.pushContracts !== undefined),
    // The operator's token of webhook jobs' runs endpoint (the demo calls it): given, or the stack's own.
    RUNS_API_TOKEN: env.RUNS_API_TOKEN || `dev-${randomBytes(24).toString('hex')}`,
    CHAIN_POLL_INTERVAL_MS: env.CHAIN_POLL_INTERVAL_MS || '100',
    // Jobs with forwardingAllowed send through the stack's AuthorizedForwarder.
    FORWARDER_ADDRESS: env.FORWARDER_ADDRESS || contracts.addresses.forwarder,
    // One dev consumer makes every request: per-requester bounds are off unless asked for.
    REQUESTER_MAX_CONCURRENT_RUNS: env.REQUESTER_MAX_CONCURRENT_RUNS || '0',
    REQUESTER_MAX_REQUESTS_PER_MINUTE: env.REQUESTER_MAX_REQUESTS_PER_MINUTE || '0',
    // A chain started here is read from its first block; a given RPC_URL from the head on.
    ...(bootSettings.RPC_URL ? {} : { RUNNER_FROM_BLOCK: '0' }),
  }
}

/** The shipped specs: the request specs of jobs/, and with the push contracts jobs/push/ too. */
export function stackJobsDir(push: boolean): string {
  const jobs = join(projectRoot, 'jobs')
  return push ? `${jobs},${join(jobs, 'push')}` : jobs
}

/**
 * The adapter, the fetch workers and (unless turned off) the runner; the adapter's port and URL go
 * into the stack's environment, where the runner's bridge finds them.
 */
async function startServingParts(
  settings: Settings,
  env: NodeJS.ProcessEnv,
  stackEnv: Record<string, string>,
  stack: { options: DevStackOptions; connections: Connections; logger: Logger },
  stops: Stops,
): Promise<Pick<DevStack, 'adapter' | 'workers' | 'runner'>> {
  const { options, connections, logger } = stack
  // The adapter's port carries webhook jobs' runs endpoint; the runner is found when a call comes.
  const runnerChains: { byChain?: ReadonlyMap<number, ChainRuns> } = {}
  const adapter = await startStackAdapter(
    settings,
    env.EA_PORT ? Number(env.EA_PORT) : undefined,
    options.preferredPorts?.adapter,
    { logger: logger.child({ part: 'adapter' }), connections, runners: () => runnerChains.byChain },
  )
  stackEnv.EA_PORT = String(adapter.port)
  stops.push(() => adapter.close())
  stackEnv.BRIDGE_DATAFEED_URL = adapter.url
  const workers = await startFetchWorkers({
    settings,
    logger: logger.child({ part: 'worker' }),
    connections,
  })
  stops.push(() => workers.close())
  if (options.runner === false) return { adapter, workers, runner: undefined }
  const runner = await startRunnerFromSettings(settings, logger.child({ part: 'runner' }), {
    env: { ...env, ...stackEnv },
    connections,
  })
  stops.push(() => runner.stop())
  runnerChains.byChain = runner.byChain
  return { adapter, workers, runner }
}

/** The local feed service of the stack, on its preferred port when free. */
async function startStackFeeds(
  options: DevStackOptions,
  nodeKeys: readonly string[],
  feedKey: string,
  rpcUrl: string,
  stops: Stops,
): Promise<{ feedServer: FeedServer; feedUrl: string }> {
  // The node's own addresses may use signed keys (SIGNKEY_MODE=signed), as a feed operator would allow.
  const signers = nodeKeys.map((key) => new Wallet(key).address)
  const feedServer = createFeedServer({
    keys: [feedKey],
    signers,
    chains: { [DEV_BLOCKCHAIN_ID]: rpcUrl },
    intercept: options.feedIntercept,
  })
  const feedUrl = await onPreferredPort(options.preferredPorts?.feeds, (port) =>
    feedServer.listen(port),
  )
  stops.push(() => feedServer.close())
  return { feedServer, feedUrl }
}

/** Deletes every key under `prefix:` but `keep` (only feedrunner's own dev namespace is ever cleared). */
async function clearPrefix(connections: Connections, prefix: string, keep?: string): Promise<void> {
  const redis = connections.redis('worker', 'dev prefix cleanup')
  try {
    // Every master of a cluster; a batch comes from one node, and a hash-tagged prefix (which a
    // cluster requires) keeps its keys in one slot, so one UNLINK takes the batch.
    for await (const batch of scanKeyBatches(redis, `${prefix}:*`, 1000)) {
      const keys = batch.filter((key) => key !== keep)
      if (keys.length > 0) await redis.unlink(...keys)
    }
  } finally {
    redis.disconnect()
  }
}

/** REDIS_URL when a Redis answers there, else a private redis-server this stack starts and stops. */
async function redisForStack(
  wanted: string,
  logger: Logger,
  stops: Stops,
  own = false,
): Promise<string> {
  if ((!own || !redisServerInstalled()) && (await redisAnswers(wanted))) return wanted
  const redis: PrivateRedis = await startPrivateRedis()
  stops.push(() => redis.stop())
  logger.info(
    { redisUrl: redis.url, wanted },
    own
      ? 'started a private redis-server (REDIS_URL not set)'
      : 'no Redis answered at REDIS_URL: started a private redis-server',
  )
  return redis.url
}

/**
 * The stack's adapter on EA_PORT (or a preferred port, else any), loopback only, with /live, /ready,
 * /metrics, the dashboard and webhook jobs' runs endpoint on its port.
 */
async function startStackAdapter(
  settings: Settings,
  adapterPort: number | undefined,
  preferredPort: number | undefined,
  parts: { logger: Logger; connections: Connections; runners: RunnersOf },
): Promise<RunningAdapter> {
  const { logger: adapterLogger, connections } = parts
  const startAdapterOn = (port: number) =>
    startAdapter({
      settings: { ...settings, EA_PORT: port },
      logger: adapterLogger,
      connections,
      // Loopback only: the dev stack has no authentication and well-known keys. The framework's own
      // metrics server would take one more port per stack; /metrics is on the adapter's port instead.
      framework: { METRICS_ENABLED: false, EA_HOST: '127.0.0.1' },
      metricsServedElsewhere: true,
      // /live, /ready, /metrics and (DASHBOARD_ENABLED) the dashboard on the adapter's port.
      mount: async (api, bind) => {
        registerMetricsRoute(api)
        collectProcessMetrics()
        registerRunsRoute(api, runsRouteOptions(settings, connections, parts.runners))
        return mountOperations(api, settings, adapterLogger, connections, bind)
      },
    })
  return adapterPort !== undefined
    ? startAdapterOn(adapterPort)
    : onPreferredPort(preferredPort, startAdapterOn)
}
