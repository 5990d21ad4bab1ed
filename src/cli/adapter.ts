import type { Command } from 'commander'
import type { Logger } from '../config/logger.ts'
import {
  FEED_FAMILIES,
  familyUrlSetting,
  SettingsError,
  type FeedFamily,
  type Settings,
} from '../config/settings.ts'
import type { Connections } from '../queue/connections.ts'
import type { ChainRuns } from '../runner/webhook.ts'
import { announce } from './announce.ts'
import type { Served } from './exposure.ts'
import {
  operationsRunning,
  serveUntilSignal,
  settingsOrExit,
  startOperationsPort,
  warnIfExposed,
  type RunningPart,
} from './lifecycle.ts'

/** A part of `feedrunner start`; returns how to stop it. */
// The EA framework, BullMQ and the feeds client load only when a command that needs them runs, so
// every other command (feeds serve, status, --help) starts fast.
const adapterModule = (): Promise<typeof import('../adapter/adapter.ts')> =>
  import('../adapter/adapter.ts')
const workersModule = (): Promise<typeof import('../adapter/workers.ts')> =>
  import('../adapter/workers.ts')
const serviceLogModule = (): Promise<typeof import('./service-log.ts')> =>
  import('./service-log.ts')
const dashboardModule = (): Promise<typeof import('../dashboard/mount.ts')> =>
  import('../dashboard/mount.ts')
const connectionsModule = (): Promise<typeof import('../queue/connections.ts')> =>
  import('../queue/connections.ts')
const startChecksModule = (): Promise<typeof import('./start-checks.ts')> =>
  import('./start-checks.ts')

/** What a part of a process is started with: the settings, read once, and the process's connections. */
export interface ProcessContext {
  settings: Settings
  logger: Logger
  connections: Connections
  /**
   * `feedrunner start` with a runner: the webhook runs endpoint is on the adapter's port, which listens
   * before the runner starts; the runner part puts its chains here once it runs.
   */
  webhookRunners?: { byChain?: ReadonlyMap<number, ChainRuns> }
}

export type StartPart = (context: ProcessContext) => Promise<RunningPart>

/** What a part checks of the settings before anything starts (no port, no connection); exits on a problem. */
export type StartCheck = (settings: Settings, logger: Logger) => Promise<void>

const extraStartParts: StartPart[] = []
const extraStartChecks: StartCheck[] = []

/** Lets another command group (the runner) join `feedrunner start`; call it from its `register`. */
export function addStartPart(part: StartPart, check?: StartCheck): void {
  extraStartParts.push(part)
  if (check) extraStartChecks.push(check)
}

export function register(program: Command): void {
  program
    .command('adapter')
    .description(
      'The external adapter alone (HTTP on EA_PORT); fetches go to the fetch queues on REDIS_URL',
    )
    .action(() => run('adapter', async (context) => [await adapterPart(context)]))

  program
    .command('worker')
    .description(
      'Fetch workers alone: take fetch jobs from the queues on REDIS_URL and call the feed service',
    )
    .option(
      '--families <list>',
      `comma-separated families (default: those with a <FAMILY>_URL set): ${FEED_FAMILIES.join(', ')}`,
    )
    .action((options: { families?: string }) =>
      run(
        'worker',
        async (context) => [
          await workerPart(context, parseFamilies(options.families)),
          ...(await operationsPart(context)),
        ],
        [async (settings) => checkFamilies(settings, parseFamilies(options.families))],
      ),
    )

  program
    .command('start')
    .description(
      'Every configured part in one process: the adapter, fetch workers for the configured families, and the runner when it is available',
    )
    .action(() =>
      run(
        'start',
        async (context) => {
          const parts: RunningPart[] = [await adapterPart(context)]
          if ((await workersModule()).configuredFamilies(context.settings).length > 0)
            parts.push(await workerPart(context))
          else context.logger.warn('no <FAMILY>_URL set: this process runs no fetch workers')
          for (const part of extraStartParts) parts.push(await part(context))
          return parts
        },
        extraStartChecks,
      ),
    )
}

async function adapterPart({
  settings,
  logger,
  connections,
  webhookRunners,
}: ProcessContext): Promise<RunningPart> {
  const { startAdapter } = await adapterModule()
  const adapterLogger = logger.child({ part: 'adapter' })
  const { mountOperations } = await dashboardModule()
  const webhook = webhookRunners && (await import('../runner/webhook.ts'))
  const adapter = await startAdapter({
    settings,
    logger: adapterLogger,
    connections,
    mount: (api, bind) => {
      if (webhook && webhookRunners)
        webhook.registerRunsRoute(
          api,
          webhook.runsRouteOptions(settings, connections, () => webhookRunners.byChain),
        )
      return mountOperations(api, settings, adapterLogger, connections, bind)
    },
  })
  announce(
    logger,
    { listening: adapter.listening, metrics: adapter.metricsListening },
    `feedrunner adapter listening on ${adapter.listening}${adapter.metricsListening ? ` (metrics ${adapter.metricsListening}/metrics)` : ''}`,
  )
  const served: Served[] = [
    { listening: adapter.listening, loopback: adapter.loopback, what: 'adapter' },
  ]
  if (adapter.metricsListening)
    served.push({
      listening: adapter.metricsListening,
      loopback: adapter.loopback,
      what: 'metrics',
    })
  return { name: 'adapter', close: () => adapter.close(), served }
}

async function workerPart(
  { settings, logger, connections }: ProcessContext,
  families?: FeedFamily[],
) {
  const { startFetchWorkers } = await workersModule()
  const workers = await startFetchWorkers({
    settings,
    logger: logger.child({ part: 'worker' }),
    connections,
    ...(families ? { families } : {}),
  })
  announce(
    logger,
    { families: workers.families },
    `feedrunner fetch workers running for ${workers.families.join(', ')}`,
  )
  return { name: 'worker', close: () => workers.close() }
}

/** Metrics and health on OPERATIONS_PORT for a process without the adapter (none when it is 0). */
async function operationsPart({ settings, logger }: ProcessContext) {
  const server = await startOperationsPort(settings, logger)
  return server ? [operationsRunning(server)] : []
}

/** The families a worker fetches each have their URL (a family named by --families may lack it). */
function checkFamilies(settings: Settings, families: FeedFamily[] | undefined): void {
  const missing = (families ?? []).filter(
    (family) => settings[familyUrlSetting(family)] === undefined,
  )
  if (missing.length > 0) {
    console.error(
      missing
        .map((family) => `${familyUrlSetting(family)}: required for --families ${family} (not set)`)
        .join('\n'),
    )
    process.exit(1)
  }
}

function parseFamilies(list: string | undefined): FeedFamily[] | undefined {
  if (list === undefined) return undefined
  const families = list
    .split(',')
    .map((family) => family.trim())
    .filter(Boolean)
  const unknown = families.filter(
    (family) => !(FEED_FAMILIES as readonly string[]).includes(family),
  )
  if (unknown.length > 0)
    throw new SettingsError([
      `--families: unknown ${unknown.join(', ')} (expected ${FEED_FAMILIES.join(', ')})`,
    ])
  return families as FeedFamily[]
}

/**
 * The composition root of `adapter`, `worker` and `start`: reads the settings once, opens the
 * process's connections, starts the parts with both, then serves until SIGINT/SIGTERM, when it closes
 * the parts in reverse order and the connections last.
 */
async function run(
  name: string,
  startParts: (context: ProcessContext) => Promise<RunningPart[]>,
  checks: readonly StartCheck[] = [],
): Promise<void> {
  const { settingsWithKeys, waitForRedis, startFailure } = await startChecksModule()
  // Keys opened before the logger exists: its scrubber knows every secret it must never write.
  const parsed = settingsOrExit()
  const runsRunner = name === 'start' && (parsed.RPC_URL || parsed.CHAINS_FILE) !== undefined
  const settings = settingsWithKeys(parsed, runsRunner)
  const logger = (await serviceLogModule()).serviceLogger(settings, `feedrunner-${name}`)
  // Everything is checked before a port opens or a connection is tried.
  for (const check of checks) await check(settings, logger)
  await waitForRedis(settings, `feedrunner ${name}`)
  const connections = new (await connectionsModule()).Connections(settings, logger)
  let parts: RunningPart[]
  try {
    parts = await startParts({
      settings,
      logger,
      connections,
      ...(runsRunner ? { webhookRunners: {} } : {}),
    })
  } catch (error) {
    console.error(`feedrunner ${name} could not start: ${startFailure(error, settings)}`)
    await connections.close()
    process.exit(1)
  }
  warnIfExposed(settings, logger, parts)
  serveUntilSignal(logger, parts, connections)
}
