import type { Command } from 'commander'
import type { Logger } from '../config/logger.ts'
import {
  FEED_FAMILIES,
  parseSettings,
  SettingsError,
  type FeedFamily,
  type Settings,
} from '../config/settings.ts'
import { startOperationsPort } from './lifecycle.ts'

/** A part of `feedrunner start`; returns how to stop it. */
// The EA framework, BullMQ and the feeds client load only when a command that needs them runs, so
// every other command (feeds serve, status, --help) starts fast.
const adapterModule = (): Promise<typeof import('../adapter/adapter.ts')> =>
  import('../adapter/adapter.ts')
const workersModule = (): Promise<typeof import('../adapter/workers.ts')> =>
  import('../adapter/workers.ts')
const loggerModule = (): Promise<typeof import('../config/logger.ts')> =>
  import('../config/logger.ts')
const dashboardModule = (): Promise<typeof import('../dashboard/mount.ts')> =>
  import('../dashboard/mount.ts')

export type StartPart = (
  settings: Settings,
  logger: Logger,
) => Promise<{ name: string; close(): Promise<void> }>

const extraStartParts: StartPart[] = []

/** Lets another command group (the runner) join `feedrunner start`; call it from its `register`. */
export function addStartPart(part: StartPart): void {
  extraStartParts.push(part)
}

export function register(program: Command): void {
  program
    .command('adapter')
    .description(
      'The external adapter alone (HTTP on EA_PORT); fetches go to the fetch queues on REDIS_URL',
    )
    .action(() => run('adapter', async (settings, logger) => [await adapterPart(settings, logger)]))

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
      run('worker', async (settings, logger) => [
        await workerPart(settings, logger, parseFamilies(options.families)),
        ...(await operationsPart(settings, logger)),
      ]),
    )

  program
    .command('start')
    .description(
      'Every configured part in one process: the adapter, fetch workers for the configured families, and the runner when it is available',
    )
    .action(() =>
      run('start', async (settings, logger) => {
        const parts = [await adapterPart(settings, logger)]
        if ((await workersModule()).configuredFamilies(settings).length > 0)
          parts.push(await workerPart(settings, logger))
        else logger.warn('no <FAMILY>_URL set: this process runs no fetch workers')
        for (const part of extraStartParts) parts.push(await part(settings, logger))
        return parts
      }),
    )
}

async function adapterPart(settings: Settings, logger: Logger) {
  const { startAdapter } = await adapterModule()
  const adapterLogger = logger.child({ part: 'adapter' })
  const { mountOperations } = await dashboardModule()
  const adapter = await startAdapter({
    settings,
    logger: adapterLogger,
    mount: (api) => mountOperations(api, settings, adapterLogger),
  })
  console.log(
    `feedrunner adapter listening on ${adapter.url}${adapter.metricsUrl ? ` (metrics ${adapter.metricsUrl})` : ''}`,
  )
  return { name: 'adapter', close: () => adapter.close() }
}

async function workerPart(settings: Settings, logger: Logger, families?: FeedFamily[]) {
  const { startFetchWorkers } = await workersModule()
  const workers = await startFetchWorkers({
    settings,
    logger: logger.child({ part: 'worker' }),
    ...(families ? { families } : {}),
  })
  console.log(`feedrunner fetch workers running for ${workers.families.join(', ')}`)
  return { name: 'worker', close: () => workers.close() }
}

/** Metrics and health on OPERATIONS_PORT for a process without the adapter (none when it is 0). */
async function operationsPart(settings: Settings, logger: Logger) {
  const server = await startOperationsPort(settings, logger)
  return server ? [{ name: 'operations', close: () => server.close() }] : []
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

/** Starts the parts, then serves until SIGINT/SIGTERM, when it stops them in reverse order. */
async function run(
  name: string,
  startParts: (
    settings: Settings,
    logger: Logger,
  ) => Promise<{ name: string; close(): Promise<void> }[]>,
): Promise<void> {
  let settings: Settings
  try {
    settings = parseSettings(process.env)
  } catch (error) {
    console.error(error instanceof SettingsError ? error.message : String(error))
    process.exit(1)
  }
  const logger = (await loggerModule()).createLogger(settings, `feedrunner-${name}`)
  let parts: { name: string; close(): Promise<void> }[]
  try {
    parts = await startParts(settings, logger)
  } catch (error) {
    console.error(
      `feedrunner ${name} could not start: ${error instanceof Error ? error.message : String(error)}`,
    )
    process.exit(1)
  }
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'stopping')
    // A stuck close must not keep the process from exiting.
    const force = setTimeout(() => process.exit(1), 10_000)
    force.unref()
    for (const part of [...parts].reverse())
      await part
        .close()
        .catch((error: unknown) =>
          logger.error({ part: part.name, err: String(error) }, 'close failed'),
        )
    process.exit(0)
  }
  process.once('SIGINT', () => void stop('SIGINT'))
  process.once('SIGTERM', () => void stop('SIGTERM'))
}
