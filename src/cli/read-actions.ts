import { endpointOf } from '../config/settings.ts'
import { connectClient } from '../queue/connection.ts'
import { RunStore, type RunRecord } from '../runner/run-record.ts'
import { readStatus, type StatusReport } from '../runner/status.ts'
import { readPushedValues, pushedValuesTable } from './dev-push-status.ts'
import { withDevStack } from './dev-state.ts'
import { settingsOrExit } from './lifecycle.ts'
import { printRun } from './run-view.ts'
import { renderTable } from './table.ts'

// `status` and `runs show`: they read Redis and the jobs folder and print, so they load neither the
// runner nor BullMQ (bench/commands.ts times them; test/cli/read-commands-load.test.ts holds it).

/** How many leading characters of a request id `status` shows; `runs show` takes any unique prefix. */
const SHOWN_ID_CHARS = 12

export async function statusAction(options: { runs: string; json?: boolean }): Promise<void> {
  const { env, devStack } = withDevStack()
  const settings = settingsOrExit(env)
  const redis = await connectClient(settings.REDIS_URL).catch(exitWith)
  try {
    const report = await readStatus(redis, settings.QUEUE_PREFIX, Number(options.runs) || 20)
    // The dev stack's only when its Redis and prefix are what was read: REDIS_URL or QUEUE_PREFIX
    // set in the environment name another installation (an operator's own node).
    const ownStack =
      devStack &&
      devStack.redisUrl === settings.REDIS_URL &&
      devStack.queuePrefix === settings.QUEUE_PREFIX
        ? devStack
        : undefined
    // The dev stack's cron and webhook push feeds, read from its chain (the flux feeds are in report).
    const pushed = ownStack ? await readPushedValues(ownStack) : []
    if (options.json)
      console.log(JSON.stringify(pushed.length > 0 ? { ...report, pushed } : report, null, 2))
    else {
      const where = `Redis ${endpointOf(settings.REDIS_URL)}, queue prefix ${settings.QUEUE_PREFIX}`
      console.log(
        ownStack ? `dev stack of this checkout (pid ${ownStack.pid}): ${where}\n` : `${where}\n`,
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
      if ((report.flux ?? []).length > 0) console.log(`\n${fluxTable(report.flux ?? [])}`)
      if (pushed.length > 0) console.log(`\n${pushedValuesTable(pushed)}`)
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

/** Each flux feed: its latest answer and round on chain, when its heartbeat or drumbeat is due. */
function fluxTable(feeds: NonNullable<StatusReport['flux']>): string {
  const time = (seconds: number | undefined) =>
    seconds === undefined ? '-' : new Date(seconds * 1000).toISOString().slice(11, 19)
  return renderTable(
    [
      'flux feed',
      'chain',
      'aggregator',
      'round',
      'answer',
      'updated (UTC)',
      'next heartbeat/drumbeat',
    ],
    feeds.map((feed) => [
      feed.job,
      String(feed.chainId),
      feed.aggregator,
      feed.roundId ?? '-',
      feed.answer ?? '-',
      time(feed.updatedAt),
      feed.nextDrumbeatAt === undefined
        ? time(feed.nextHeartbeatAt)
        : `${time(feed.nextDrumbeatAt)} (drumbeat)`,
    ]),
  )
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
    // The job specs' loader brings the pipeline (ethers among it): `runs show` does without.
    const { loadJobRegistry } = await import('../runner/job-registry.ts')
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
