import { endpointOf } from '../config/settings.ts'
import { connectClient } from '../queue/connection.ts'
import { Connections } from '../queue/connections.ts'
import { RunStore, type RunRecord } from '../runner/run-record.ts'
import { loadJobRegistry } from '../runner/job-registry.ts'
import { startRunnerFromSettings } from '../runner/start.ts'
import { readStatus, type StatusReport } from '../runner/status.ts'
import type { ProcessContext } from './adapter.ts'
import { announce } from './announce.ts'
import { serviceLogger } from './service-log.ts'
import { withDevStack } from './dev-state.ts'
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
import { printRun } from './run-view.ts'
import { renderTable } from './table.ts'

/** The runner as a part of `feedrunner start` (off when neither RPC_URL nor CHAINS_FILE is set). */
export async function runnerStartPart({
  settings,
  logger,
  connections,
}: ProcessContext): Promise<RunningPart> {
  if (!settings.RPC_URL && !settings.CHAINS_FILE) {
    logger.warn('RPC_URL and CHAINS_FILE not set: this process runs no runner')
    return { name: 'runner (off)', close: async () => undefined }
  }
  const runner = await startRunnerFromSettings(settings, logger.child({ part: 'runner' }), {
    connections,
  })
  const jobs = watchRunnerJobs(runner, settings.JOBS_DIR, logger)
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
  const { registerRunsRoute } = await import('../runner/webhook.ts')
  const clock = connections.clock(settings.QUEUE_PREFIX)
  const operations = await startOperationsPort(settings, logger, (app) =>
    registerRunsRoute(app, {
      byChain: runner.byChain,
      redis: connections.redis('worker', 'runs endpoint'),
      prefix: settings.QUEUE_PREFIX,
      operatorToken: settings.RUNS_API_TOKEN,
      maxBodyBytes: settings.RUNS_API_MAX_BODY_BYTES,
      now: () => clock.now(),
    }),
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

/** How many leading characters of a request id `status` shows; `runs show` takes any unique prefix. */
const SHOWN_ID_CHARS = 12

export async function statusAction(options: { runs: string; json?: boolean }): Promise<void> {
  const { env, devStack } = withDevStack()
  const settings = settingsOrExit(env)
  const redis = await connectClient(settings.REDIS_URL).catch(exitWith)
  try {
    const report = await readStatus(redis, settings.QUEUE_PREFIX, Number(options.runs) || 20)
    if (options.json) console.log(JSON.stringify(report, null, 2))
    else {
      // The dev stack's only when its Redis and prefix are what was read: REDIS_URL or QUEUE_PREFIX
      // set in the environment name another installation (an operator's own node).
      const where = `Redis ${endpointOf(settings.REDIS_URL)}, queue prefix ${settings.QUEUE_PREFIX}`
      console.log(
        devStack &&
          devStack.redisUrl === settings.REDIS_URL &&
          devStack.queuePrefix === settings.QUEUE_PREFIX
          ? `dev stack of this checkout (pid ${devStack.pid}): ${where}\n`
          : `${where}\n`,
      )
      console.log(
        renderTable(
          ['queue', 'waiting', 'active', 'delayed', 'failed', 'completed'],
          report.queues.map((q) => [
            q.queue,
            ...[q.waiting, q.active, q.delayed, q.failed, q.completed].map(String),
          ]),
        ),
      )
      console.log()
      console.log(await jobsTable(settings.JOBS_DIR, report.served ?? []))
      for (const chain of report.served ?? [])
        if (chain.refused)
          console.log(
            `the runner of chain ${chain.chainId} refused the last change of the jobs folder, and runs the jobs it had: ${chain.refused}`,
          )
      console.log()
      console.log(
        report.runs.length === 0
          ? 'no runs yet'
          : renderTable(
              ['run', 'trigger', 'chain', 'job', 'state', 'tx', 'reason'],
              report.runs.map(runRow),
            ),
      )
    }
  } catch (error) {
    console.error(`cannot read status: ${error instanceof Error ? error.message : String(error)}`)
    process.exitCode = 1
  } finally {
    redis.disconnect()
  }
}

export async function runShowAction(requestId: string, options: { json?: boolean }): Promise<void> {
  const settings = settingsOrExit(withDevStack().env)
  const redis = await connectClient(settings.REDIS_URL).catch(exitWith)
  try {
    // Unbound: every chain's runs, by run id (`<chain id>:<request id>`).
    const store = new RunStore(redis, `${settings.QUEUE_PREFIX}:runner`)
    const matches = await store.findByPrefix(requestId)
    if (matches.length !== 1) {
      console.error(
        matches.length === 0
          ? `no run whose request id starts with ${requestId} under queue prefix ${settings.QUEUE_PREFIX} (feedrunner status lists the latest)`
          : `${requestId} is the start of several request ids (${matches.join(', ')}, ...): give more of it`,
      )
      process.exitCode = 1
      return
    }
    const run = await store.get(matches[0]!)
    if (!run) {
      console.error(`the run of request ${matches[0]} expired meanwhile`)
      process.exitCode = 1
    } else {
      // When the reconciler last checked unsettled runs against the Operator's logs (the chain's word).
      const reconciledAt = await new RunStore(
        redis,
        `${settings.QUEUE_PREFIX}:runner`,
        run.chainId,
      ).reconciledAt()
      printRun(run, { reconciledAt }, options)
    }
  } finally {
    redis.disconnect()
  }
}

/**
 * The jobs in JOBS_DIR with the externalJobID a consumer must use (given, or derived), and whether
 * the running runners serve each (when a runner says what it serves).
 */
async function jobsTable(
  dir: string,
  served: NonNullable<StatusReport['served']>,
): Promise<string> {
  try {
    const { jobs } = await loadJobRegistry(dir)
    const servedIds = new Set(served.flatMap((chain) => chain.jobs.map((job) => job.externalJobId)))
    return renderTable(
      ['job', 'externalJobID', 'chain', ...(served.length > 0 ? ['served'] : [])],
      jobs.map(({ job, name, externalJobId }) => [
        name,
        `${externalJobId}${job.externalJobIDDerived ? ' (derived)' : ''}`,
        job.spec.evmChainID === undefined ? "(the runner's)" : String(job.spec.evmChainID),
        ...(served.length > 0 ? [servedIds.has(externalJobId) ? 'yes' : 'NOT LOADED'] : []),
      ]),
    )
  } catch (error) {
    return `jobs in ${dir}: ${error instanceof Error ? error.message : String(error)}`
  }
}

function runRow(run: RunRecord): string[] {
  return [
    run.requestId.slice(0, SHOWN_ID_CHARS),
    run.trigger ?? 'request',
    String(run.chainId),
    run.job,
    run.quarantined ? `${run.state} (quarantined)` : run.state,
    run.txHash ? run.txHash.slice(0, 14) + '…' : '',
    run.reason ?? '',
  ]
}

function exitWith(error: unknown): never {
  console.error(error instanceof Error ? error.message : String(error))
  process.exit(1)
}
