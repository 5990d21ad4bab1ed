import { endpointOf } from '../config/settings.ts'
import { Connections } from '../queue/connections.ts'
import { startRunnerFromSettings } from '../runner/start.ts'
import type { ProcessContext } from './adapter.ts'
import { announce } from './announce.ts'
import { serviceLogger } from './service-log.ts'
import { watchRunnerJobs } from './jobs-reload.ts'
import { checkRunnerSettings, settingsWithKeys, waitForRedis } from './start-checks.ts'
import {
  operationsRunning,
  serveUntilSignal,
  settingsOrExit,
  startOperationsPort,
  warnIfExposed,
  type RunningPart,
} from './lifecycle.ts'

/** The runner as a part of `feedrunner start` (off when neither RPC_URL nor CHAINS_FILE is set). */
export async function runnerStartPart({
  settings,
  logger,
  connections,
  webhookRunners,
}: ProcessContext): Promise<RunningPart> {
  if (!settings.RPC_URL && !settings.CHAINS_FILE) {
    logger.warn('RPC_URL and CHAINS_FILE not set: this process runs no runner')
    return { name: 'runner (off)', close: async () => undefined }
  }
  const runner = await startRunnerFromSettings(settings, logger.child({ part: 'runner' }), {
    connections,
  })
  const jobs = watchRunnerJobs(runner, settings.JOBS_DIR, logger)
  // The adapter's port carries the runs endpoint of webhook jobs; it answers from here on.
  if (webhookRunners) webhookRunners.byChain = runner.byChain
  // Host and port only: an RPC URL's path often carries an API key.
  announce(
    logger,
    { chains: [...runner.byChain.keys()] },
    settings.RPC_URL
      ? `feedrunner runner watching and working on RPC_URL ${endpointOf(settings.RPC_URL)}`
      : `feedrunner runner watching and working on chains ${[...runner.byChain.keys()].join(', ')} (CHAINS_FILE ${settings.CHAINS_FILE})`,
  )
  return {
    name: 'runner',
    close: async () => {
      await jobs.close()
      await runner.stop()
    },
  }
}

/** The composition root of `feedrunner runner`. */
export async function runnerAction(options: { listen: boolean; work: boolean }): Promise<void> {
  // Keys opened before the logger exists, then everything checked before a connection is tried.
  const settings = settingsWithKeys(settingsOrExit(), true)
  const logger = serviceLogger(settings, 'feedrunner-runner')
  await checkRunnerSettings(settings, logger, true)
  await waitForRedis(settings, 'feedrunner runner')
  const connections = new Connections(settings, logger)
  const runner = await startRunnerFromSettings(settings, logger, {
    listen: options.listen,
    work: options.work,
    connections,
  }).catch(async (error: unknown) => {
    console.error(
      `feedrunner runner could not start: ${error instanceof Error ? error.message : String(error)}`,
    )
    await connections.close()
    process.exit(1)
  })
  const jobs = watchRunnerJobs(runner, settings.JOBS_DIR, logger)
  // No adapter in this process: metrics and health get a port of their own, beside the runs endpoint
  // of webhook jobs (POST /v2/jobs/<externalJobID>/runs).
  const { registerRunsRoute, runsRouteOptions } = await import('../runner/webhook.ts')
  const operations = await startOperationsPort(settings, logger, (app) =>
    registerRunsRoute(
      app,
      runsRouteOptions(settings, connections, () => runner.byChain),
    ),
  )
  const parts = [
    { name: 'runner', close: () => runner.stop() },
    jobs,
    ...(operations ? [operationsRunning(operations)] : []),
  ]
  warnIfExposed(settings, logger, parts)
  serveUntilSignal(logger, parts, connections)
  // Said once SIGTERM is handled: whoever waits for this line may stop the runner at once.
  announce(
    logger,
    { listen: options.listen, work: options.work },
    `feedrunner runner started (${options.listen ? 'listening' : 'not listening'}, ${options.work ? 'working' : 'not working'}); JOBS_DIR ${settings.JOBS_DIR} is watched (SIGHUP reloads it too)`,
  )
}
