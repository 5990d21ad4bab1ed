import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Wallet, type Contract } from 'ethers'
import { parse as parseToml } from 'smol-toml'
import { allFamilyUrls } from '../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../src/dev/anvil.ts'
import { deployDevContracts, deployFeedConsumer, type DevContracts } from '../src/dev/deploy.ts'
import { freePort } from '../src/dev/ports.ts'
import { deployPushedValue, tickWriterSpec } from '../src/dev/pushed-value.ts'
import { resumeMining } from './chain-faults.ts'
import { expectedValue } from './catalog.ts'
import { deployFluxFeed, fluxSpec } from './flux-feed.ts'
import { Part, type StopOutcome } from './part.ts'
import { RedisPair } from './redis-pair.ts'
import { startRpcProxy, type RpcProxy } from './rpc-proxy.ts'
import { runsRunner, type AdmissionPlan, type PartPlan, type Schedule } from './schedule.ts'
import { HarnessWallet } from './wallet.ts'

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const JOBS_DIR = join(projectRoot, 'jobs')
/** Every key the processes write is under this prefix, in a Redis of the schedule's own. */
export const QUEUE_PREFIX = 'chaos'

/** One schedule's stack: all of it started here, all of it stopped here. */
export interface ChaosStack {
  readonly anvil: Anvil
  readonly contracts: DevContracts
  readonly rpcProxy: RpcProxy
  readonly redis: RedisPair
  readonly parts: ReadonlyMap<string, Part>
  readonly wallet: HarnessWallet
  readonly externalJobId: string
  readonly nodeAddresses: readonly string[]
  /** The PushedValue the schedule's cron job writes each tick to, when it has one. */
  readonly pushed?: string
  /** The FluxAggregator the schedule's flux job feeds, when it has one, and what the job is. */
  readonly flux?: { aggregator: string; idleMs: number; expected: bigint }
  /** SIGTERM to every process still running (runners first), each timed. */
  stopParts(): Promise<StopOutcome[]>
  /** Everything else: proxies, anvil, Redis (after stopParts, or by SIGKILL if parts remain). */
  stop(): Promise<void>
}

/** The game-odds job's externalJobID, as jobs/game-odds.toml declares it. */
function gameOddsJobId(): string {
  const spec = parseToml(readFileSync(join(JOBS_DIR, 'game-odds.toml'), 'utf8'))
  const id = spec.externalJobID
  if (typeof id !== 'string') throw new Error('jobs/game-odds.toml has no externalJobID')
  return id
}

/**
 * Starts what a schedule runs on: Redis (primary, replica, proxy), anvil mining a block every
 * `blockTimeSeconds` with the contracts deployed, the RPC proxy, the feed service, the adapter, the
 * fetch worker and the runners, each a `feedrunner` process of its own.
 */
export async function startChaosStack(schedule: Schedule): Promise<ChaosStack> {
  const cleanups: Array<() => Promise<unknown>> = []
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => undefined)
  }
  try {
    const redis = await RedisPair.start()
    cleanups.push(() => redis.stop())
    // Deployed under automine (a block per transaction), then mining turns to a block time.
    const anvil = await startAnvil({})
    cleanups.push(() => anvil.stop())
    const nodeKeys = ANVIL_PRIVATE_KEYS.slice(1, 1 + schedule.nodeKeys)
    const contracts = await deployDevContracts(anvil.rpcUrl, { nodeKeys })
    cleanups.push(async () => contracts.provider.destroy())
    const consumers = [contracts.consumer, ...(await moreConsumers(contracts, schedule.requesters))]
    const nodeAddresses = nodeKeys.map((key) => new Wallet(key).address)
    const pushed =
      schedule.cron && (await deployPushedValue(contracts, nodeAddresses, 'chaos cron'))
    const aggregator = schedule.flux && (await deployFluxFeed(contracts, nodeAddresses))
    const extra = {
      ...(pushed && schedule.cron ? { 'chaos-cron.toml': cronSpec(pushed, schedule.cron) } : {}),
      ...(aggregator && schedule.flux
        ? { 'chaos-flux.toml': fluxSpec(aggregator, contracts.chainId, schedule.flux) }
        : {}),
    }
    const jobsDir = Object.keys(extra).length > 0 ? jobsDirWith(extra) : JOBS_DIR
    if (jobsDir !== JOBS_DIR) cleanups.push(async () => rmSync(jobsDir, { recursive: true }))
    await resumeMining(anvil.rpcUrl, schedule.blockTimeSeconds)
    const rpcProxy = await startRpcProxy(anvil.rpcUrl)
    cleanups.push(() => rpcProxy.close())

    const parts = await partsOf(schedule.parts, {
      redisUrl: redis.url,
      rpcUrl: rpcProxy.url,
      nodeKeys,
      lockMs: schedule.lockMs,
      admission: schedule.admission,
      jobsDir,
    })
    const stopParts = () => stopAll([...parts.values()])
    cleanups.push(() => stopAll([...parts.values()], 'SIGKILL'))
    // The feed service first (the adapter's workers call it), the rest side by side.
    await parts.get('feeds')!.start()
    await Promise.all([...parts.values()].filter((part) => !part.running).map((p) => p.start()))

    const wallet = new HarnessWallet(contracts.deployer, consumers, anvil.rpcUrl)
    await wallet.init()
    return {
      anvil,
      contracts,
      rpcProxy,
      redis,
      parts,
      wallet,
      externalJobId: gameOddsJobId(),
      nodeAddresses,
      ...(pushed ? { pushed } : {}),
      ...(aggregator && schedule.flux
        ? {
            flux: {
              aggregator,
              idleMs: schedule.flux.idleMs,
              expected: expectedValue(schedule.flux),
            },
          }
        : {}),
      stopParts,
      stop: cleanup,
    }
  } catch (error) {
    await cleanup()
    throw error
  }
}

/**
 * FeedConsumer contracts beside the dev stack's, up to `requesters` in all, deployed while the chain
 * still mines a block per transaction: to the Operator and the runners each is a requester of its own.
 */
async function moreConsumers(contracts: DevContracts, requesters: number): Promise<Contract[]> {
  const deployed: Contract[] = []
  for (let made = 1; made < requesters; made++) deployed.push(await deployFeedConsumer(contracts))
  return deployed
}

/** The externalJobID of the schedule's cron job. */
export const CRON_JOB_ID = '6c1f0e2a-9b7d-4c3e-8a51-2f4d6e8b0c99'

/** A cron job that writes each tick, and which tick it is, to `pushed`. */
function cronSpec(pushed: string, cron: { everyMs: number }): string {
  const schedule = `@every ${cron.everyMs / 1_000}s`
  return tickWriterSpec({ name: 'chaos cron', externalJobId: CRON_JOB_ID, schedule, pushed })
}

/** The shipped jobs and the schedule's own specs (file name -> TOML): a folder removed with the stack. */
function jobsDirWith(specs: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-chaos-jobs-'))
  cpSync(JOBS_DIR, dir, { recursive: true })
  for (const [file, spec] of Object.entries(specs)) writeFileSync(join(dir, file), spec)
  return dir
}

interface Wiring {
  jobsDir: string
  redisUrl: string
  rpcUrl: string
  nodeKeys: readonly string[]
  lockMs: number
  admission: AdmissionPlan
}

/** The processes of the plan, with their settings (environment) and arguments; none started yet. */
async function partsOf(plans: readonly PartPlan[], wiring: Wiring): Promise<Map<string, Part>> {
  const feedPort = await freePort()
  const adapterPort = await freePort()
  const startPort = await freePort()
  const feedKey = `chaos-${randomBytes(8).toString('hex')}`
  const common: Record<string, string> = {
    REDIS_URL: wiring.redisUrl,
    QUEUE_PREFIX,
    ...allFamilyUrls(`http://127.0.0.1:${feedPort}`),
    FEED_API_KEY: feedKey,
    JOBS_DIR: wiring.jobsDir,
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    // Several processes on one host: no fixed operations or metrics ports.
    OPERATIONS_PORT: '0',
    METRICS_ENABLED: 'false',
  }
  const runnerEnv: Record<string, string> = {
    ...common,
    RPC_URL: wiring.rpcUrl,
    NODE_PRIVATE_KEY: wiring.nodeKeys[0]!,
    ...(wiring.nodeKeys.length > 1 ? { NODE_PRIVATE_KEYS: wiring.nodeKeys.join(',') } : {}),
    BRIDGE_DATAFEED_URL: `http://127.0.0.1:${adapterPort}`,
    CHAIN_POLL_INTERVAL_MS: '250',
    RUNNER_FROM_BLOCK: '0',
    RUNNER_LOCK_MS: String(wiring.lockMs),
    // Quick reconciliation, as the reliability tests run it: a schedule is short.
    RUNNER_RECONCILE_INTERVAL_MS: '2000',
    // Several consumers make the requests, the busiest past these bounds (schedule.ts requestersOf).
    REQUESTER_MAX_CONCURRENT_RUNS: String(wiring.admission.maxConcurrentRuns),
    REQUESTER_MAX_REQUESTS_PER_MINUTE: String(wiring.admission.maxRequestsPerMinute),
  }
  const specOf = (plan: PartPlan) => {
    switch (plan.kind) {
      case 'runner':
        return { args: ['runner'], env: runnerEnv }
      case 'start':
        // Its own adapter answers on a port of its own; its runner calls the shared one, as the others do.
        return { args: ['start'], env: { ...runnerEnv, EA_PORT: String(startPort) } }
      case 'adapter':
        return { args: ['adapter'], env: { ...common, EA_PORT: String(adapterPort) } }
      case 'worker':
        return { args: ['worker'], env: common }
      case 'feeds':
        return {
          args: ['feeds', 'serve', '--port', String(feedPort), '--keys', feedKey],
          env: { LOG_LEVEL: 'warn' },
        }
    }
  }
  return new Map(
    plans.map((plan) => [
      plan.name,
      new Part({
        name: plan.name,
        kind: plan.kind,
        ...specOf(plan),
        clockOffsetSeconds: plan.clockOffsetSeconds,
      }),
    ]),
  )
}

/** Signals every running part, runners first (their runs may still call the adapter), and times each. */
async function stopAll(parts: readonly Part[], signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM') {
  const runners = parts.filter((part) => runsRunner(part.spec.kind))
  const others = parts.filter((part) => !runsRunner(part.spec.kind))
  const outcomes = [
    ...(await Promise.all(runners.map((part) => part.stop(signal)))),
    ...(await Promise.all(others.map((part) => part.stop(signal)))),
  ]
  return outcomes.filter((outcome): outcome is StopOutcome => outcome !== undefined)
}
