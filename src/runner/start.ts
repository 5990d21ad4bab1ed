import { computeAddress } from 'ethers'
import {
  chainsFromSettings,
  endpointName,
  jobChainDefaults,
  type ChainConfig,
} from '../config/chains.ts'
import { FeedrunnerError } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import { SettingsError, type Settings } from '../config/settings.ts'
import { connectProvider, fetchChainId } from '../chain/provider.ts'
import {
  isolationFromSettings,
  pipelineLimits,
  type HostResolver,
  type TaskIsolation,
} from '../pipeline/index.ts'
import { Connections } from '../queue/connections.ts'
import { JobsDirError, loadJobRegistry, type JobRegistry, type JobsChange } from './job-registry.ts'
import { readEndpoint } from './runner-options.ts'
import { checkSendersAuthorised } from './sender-authorisation.ts'
import { publishLoadedJobs } from './loaded-jobs.ts'
import { createRunner, type Runner } from './runner.ts'
import { retryPolicyOf } from './retry-policy.ts'

export interface RunnerFromSettingsOptions {
  listen?: boolean
  work?: boolean
  /** Environment the pipeline's bridge and http tasks read (BRIDGE_<NAME>_URL), and keys_env's variables. */
  env?: NodeJS.ProcessEnv
  /** The process's connections (its composition root's); a runner started without them has its own. */
  connections?: Connections
  /** How the http task's guard resolves names (the hostile-source test injects a rebinding one). */
  resolveHost?: HostResolver
}

/**
 * The runners of one process, one per configured chain, sharing the process's connections. The
 * `Runner` fields are the first chain's (the only one's with RPC_URL); `byChain` has each.
 */
export interface Runners extends Runner {
  readonly byChain: ReadonlyMap<number, Runner>
  /** Every chain's jobs. */
  readonly allJobs: JobRegistry
  /**
   * Loads JOBS_DIR again for the same chains and swaps it in whole (each chain's runner follows);
   * throws JobsDirError, keeping the jobs it had, when a spec is broken.
   */
  reloadJobs(): Promise<JobsChange>
  /** Tells the other processes (`request`) why the last reload was refused, or that it was not. */
  jobsRefused(reason: string | undefined): void
}

/**
 * Builds and starts one runner per chain (CHAINS_FILE, or RPC_URL's one chain) from the settings and
 * the specs in JOBS_DIR. A spec for a chain that is not configured is left out, with one line.
 */
export async function startRunnerFromSettings(
  settings: Settings,
  logger: Logger,
  options: RunnerFromSettingsOptions = {},
): Promise<Runners> {
  // The pure tasks of every chain's runs run in this process's isolates (docs/security.md). They
  // load the task types (a second or more) while the chains are asked their ids, and the runners
  // start once they have: a first request would otherwise wait for them, and those behind it too.
  const isolation = options.work === false ? undefined : isolationFromSettings(settings)
  const chains = await chainsAndJobs(settings, options.env ?? process.env, logger).catch(
    async (error: unknown) => {
      await isolation?.close()
      throw error
    },
  )
  const ownConnections = options.connections ? undefined : new Connections(settings, logger)
  const connections = options.connections ?? (ownConnections as Connections)
  // Read for its warning: BullMQ times this process's run retries by the host's clock.
  connections.clock(settings.QUEUE_PREFIX)
  const runners = new Map<number, Runner>()
  const stopAll = async () => {
    for (const runner of [...runners.values()].reverse()) await runner.stop()
    await isolation?.close()
    await ownConnections?.close()
  }
  try {
    await isolation?.ready()
    for (const [index, chain] of chains.configs.entries()) {
      const chainId = chains.ids[index] as number
      const log = chains.configs.length > 1 ? logger.child({ chainId }) : logger
      const jobs = chains.registry.forChain(chainId)
      if (jobs.jobs.length === 0)
        log.warn({ dir: settings.JOBS_DIR, chainId }, 'no job spec in JOBS_DIR is for this chain')
      const runner = createChainRunner(settings, chain, chainId, jobs, log, connections, {
        ...options,
        isolation,
      })
      runners.set(chainId, runner)
      // A runner that could not start (an RPC node away, a sender key the Operator does not know)
      // lets go of what it made, and so do the chains started before it.
      await runner.start()
    }
  } catch (error) {
    await stopAll().catch(() => undefined)
    throw error
  }
  // What `request` in another process reads to say at once that a job is not served here.
  const published = publishLoadedJobs(
    connections.redis('worker', 'loaded jobs'),
    settings.QUEUE_PREFIX,
    new Map([...runners].map(([chainId, runner]) => [chainId, runner.registry])),
  )
  return runnersOfChains(
    runners,
    chains,
    async () => {
      published.stop()
      await stopAll()
    },
    {
      reloadSenders: options.work !== false,
      jobsDir: settings.JOBS_DIR,
      jobsRefused: (reason) => published.refused(reason),
    },
  )
}

/** The chains a runner serves and the jobs of each, read again alike at every reload. */
interface ChainsAndJobs {
  configs: ChainConfig[]
  ids: number[]
  registry: JobRegistry
  loadRegistry: () => Promise<JobRegistry>
}

/**
 * The configured chains (CHAINS_FILE, or RPC_URL's one chain), each asked its id before any
 * connection is made (a node that does not answer is named by its setting and host:port), and the
 * specs in JOBS_DIR, each combined with its chain's defaults; a job its chain cannot run as it says
 * is refused.
 */
async function chainsAndJobs(
  settings: Settings,
  env: NodeJS.ProcessEnv,
  logger: Logger,
): Promise<ChainsAndJobs> {
  const configs = chainsFromSettings(settings, env)
  if (configs.length === 0)
    throw new SettingsError(['RPC_URL: required for the runner, or CHAINS_FILE (not set)'])
  const ids = await Promise.all(configs.map(chainIdOf))
  const loadRegistry = () =>
    loadJobRegistry(settings.JOBS_DIR, ids, {
      refuseMisfits: true,
      defaultsFor: (chainId) => jobChainDefaults(configs[ids.indexOf(chainId)]!, chainId),
    })
  const registry = await loadRegistry()
  for (const notice of registry.notices) logger.warn({ chainIds: ids }, notice)
  return { configs, ids, registry, loadRegistry }
}

/**
 * The chains' runners as one: the first chain's records and queue stand for them (a process with one
 * chain, the common case, sees its own), every chain's jobs are reloaded together.
 */
function runnersOfChains(
  runners: ReadonlyMap<number, Runner>,
  chains: ChainsAndJobs,
  stop: () => Promise<void>,
  jobs: { reloadSenders: boolean; jobsDir: string; jobsRefused: Runners['jobsRefused'] },
): Runners {
  const first = runners.values().next().value as Runner
  return {
    get runs() {
      return first.runs
    },
    get listener() {
      return first.listener
    },
    get sender() {
      return first.sender
    },
    get requestsQueue() {
      return first.requestsQueue
    },
    registry: first.registry,
    allJobs: chains.registry,
    byChain: runners,
    start: async () => undefined,
    stop,
    async reloadJobs() {
      const next = await chains.loadRegistry()
      // A working runner signs for every Operator its jobs name: a new one must know its keys.
      if (jobs.reloadSenders) await checkSenders(jobs.jobsDir, chains.configs, chains.ids, next)
      return chains.registry.replace(next.jobs, next.notices)
    },
    jobsRefused: jobs.jobsRefused,
  }
}

/** The chain id CHAINS_FILE declares (checked against every endpoint that answers), or RPC_URL's node's. */
async function chainIdOf(chain: ChainConfig): Promise<number> {
  if (chain.chainId === undefined) {
    const [endpoint] = chain.endpoints
    return fetchChainId(endpoint!.url, endpoint!.setting)
  }
  const answers = await Promise.allSettled(
    chain.endpoints.map((endpoint) => fetchChainId(endpoint.url, endpoint.setting)),
  )
  answers.forEach((answer, index) => {
    if (answer.status === 'fulfilled' && answer.value !== chain.chainId)
      throw new FeedrunnerError(
        `${endpointName(chain.endpoints[index]!)} serves chain ${answer.value}, not ${chain.label}: fix its url`,
        { kind: 'config' },
      )
  })
  return chain.chainId
}

function createChainRunner(
  settings: Settings,
  chain: ChainConfig,
  chainId: number,
  registry: JobRegistry,
  logger: Logger,
  connections: Connections,
  options: RunnerFromSettingsOptions & { isolation?: TaskIsolation },
): Runner {
  return createRunner({
    chain,
    chainId,
    connections,
    prefix: settings.QUEUE_PREFIX,
    keys: chain.keys,
    registry,
    logger,
    concurrency: settings.RUNNER_CONCURRENCY,
    lockDurationMs: settings.RUNNER_LOCK_MS,
    retry: retryPolicyOf(settings),
    logRangeBlocks: settings.CHAIN_LOG_RANGE_BLOCKS,
    maxCrashes: settings.RUN_MAX_CRASHES,
    pollIntervalMs: chain.pollIntervalMs,
    fromBlock: settings.RUNNER_FROM_BLOCK,
    reconcileIntervalMs: settings.RUNNER_RECONCILE_INTERVAL_MS,
    txConfirmations: chain.confirmations,
    finalityDepth: chain.finalityDepth,
    txBroadcastIntervalMs: settings.TX_BROADCAST_INTERVAL_MS,
    rpcMaxResponseBytes: settings.RPC_MAX_RESPONSE_BYTES,
    runOptions: {
      // The chain's forwarder and sender addresses: ethtx forwards and checks `from` with them.
      forwarder: chain.forwarder,
      senders: chain.keys.map((key) => computeAddress(key)),
      env: options.env ?? process.env,
      limits: pipelineLimits(settings),
      resolveHost: options.resolveHost,
      isolation: options.isolation,
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
}

/**
 * What the runner checks of its keys at start, for a set of jobs loaded while it runs: every sender
 * key of each chain is an authorised sender of every Operator the chain's jobs name. Refused (as the
 * jobs folder's problem, so the jobs loaded before keep running) when one is not.
 */
async function checkSenders(
  dir: string,
  chains: readonly ChainConfig[],
  chainIds: readonly number[],
  jobs: JobRegistry,
): Promise<void> {
  for (const [index, chain] of chains.entries()) {
    const chainId = chainIds[index] as number
    const ofChain = jobs.forChain(chainId)
    if (ofChain.operators().length === 0) continue
    const provider = await connectProvider(readEndpoint(chain).url, { chainId })
    try {
      await checkSendersAuthorised(provider, ofChain, chain.keys)
    } catch (error) {
      throw new JobsDirError([{ file: dir, message: (error as Error).message }])
    } finally {
      provider.destroy()
    }
  }
}
