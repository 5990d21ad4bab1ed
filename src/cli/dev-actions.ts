import { createHash } from 'node:crypto'
import { resolve } from 'node:path'
import { routeLibraryWarnings } from '../config/library-warnings.ts'
import { createLogger, type Logger } from '../config/logger.ts'
import { presentVariables } from '../config/settings.ts'
import { startDevStack, type DevStack, type DevStackOptions } from '../dev/stack.ts'
import { DEV_PUSH_FEEDS, type PushContracts } from '../dev/push-feeds.ts'
import { removeDevState, writeDevState, type DevState } from '../dev/state.ts'
import { answerLabel } from '../pipeline/index.ts'
import { drivableShape } from '../runner/feed-job.ts'
import type { LoadedJob } from '../runner/job-registry.ts'
import { devStateFile, runningDevStack } from './dev-state.ts'
import { watchRunnerJobs } from './jobs-reload.ts'
import { announce } from './announce.ts'
import { settingsOrExit, stopOnSignal } from './lifecycle.ts'
import { jsonStdout, serviceLogger } from './service-log.ts'
import { renderTable } from './table.ts'

/** The ports `feedrunner dev` takes when they are free, so a chain tool finds anvil at its usual port. */
const DEV_PORTS = { anvil: 8545, adapter: 8080, feeds: 8090 }

export async function devAction(): Promise<void> {
  const started = Date.now()
  const stateFile = devStateFile()
  const running = runningDevStack()
  if (running) {
    console.error(
      `a dev stack is already running from this checkout (pid ${running.pid}, adapter ${running.adapterUrl}): use it, or stop it first (Ctrl-C in its terminal, or kill ${running.pid})`,
    )
    process.exit(1)
  }
  // On a developer's machine the dashboard is on unless DASHBOARD_ENABLED says otherwise. A stack of
  // its own: its own Redis unless REDIS_URL names one, and then a queue prefix of this checkout's.
  const given = presentVariables(process.env)
  const { stack, logger } = await startStack(
    { DASHBOARD_ENABLED: 'true' },
    {
      preferredPorts: DEV_PORTS,
      ownRedis: given.REDIS_URL === undefined,
      prefix: given.QUEUE_PREFIX ?? checkoutPrefix(stateFile, given.REDIS_URL),
      pushJobs: true,
    },
    'feedrunner-dev',
  )
  // For a person at a terminal, the stack as tables; off a terminal, each block one line of the log.
  const say = jsonStdout(stack.settings)
    ? (text: string) => announce(logger, {}, text.replace(/^\n+/, ''))
    : (text: string) => console.log(text)
  const jobs = stack.runner
    ? watchRunnerJobs(stack.runner, stack.settings.JOBS_DIR, logger)
    : undefined
  stopOnSignal(
    async () => {
      removeDevState(stateFile)
      await jobs?.close()
      await stack.stop()
    },
    () => say('\nstopping...'),
    { withParent: true },
  )
  writeDevState(stateFile, devState(stack))
  printStack(stack, say)
  say(`\nwhere it runs: ${stateFile}`)
  say(
    `\nfeedrunner dev ready in ${((Date.now() - started) / 1000).toFixed(1)} s. Ctrl-C stops everything.`,
  )
  say(
    'In another terminal of this checkout (each finds this stack by itself):\n' +
      '  npx feedrunner request game-odds   # one request on chain, with the documented example\n' +
      '  npx feedrunner status              # queue depths and the latest runs\n' +
      '  npx feedrunner demo                # one request per job, on a stack of its own',
  )
}

/** What `status`, `runs show` and `request` need to find this stack. */
function devState(stack: DevStack): DevState {
  const { addresses, chainId } = stack.contracts
  return {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    redisUrl: stack.redisUrl,
    queuePrefix: stack.settings.QUEUE_PREFIX,
    rpcUrl: stack.rpcUrl,
    chainId,
    jobsDir: stack.settings.JOBS_DIR,
    adapterUrl: stack.adapter.url,
    feedServiceUrl: stack.feedServer.url,
    metricsUrl: stack.metricsUrl,
    healthUrl: stack.healthUrl,
    ...(stack.settings.DASHBOARD_ENABLED
      ? { dashboardUrl: `${stack.adapter.url}${stack.settings.DASHBOARD_PATH}` }
      : {}),
    ...(stack.demoTokens ? { demoTransferTx: stack.demoTokens.erc20.transferTx } : {}),
    ...(stack.pushContracts ? { pushedValues: pushedValues(stack, stack.pushContracts) } : {}),
    contracts: {
      linkToken: addresses.linkToken,
      operator: addresses.operator,
      consumer: addresses.consumer,
      forwarder: addresses.forwarder,
    },
  }
}

/**
 * The queue prefix of this checkout's dev stack when REDIS_URL names a Redis others may use: two
 * checkouts on one Redis under the old fixed `feedrunner-dev` mixed their runs. Derived from where
 * the stack records itself (the checkout, or DEV_STATE_FILE), so `status` and `runs show` agree.
 */
function checkoutPrefix(stateFile: string, redisUrl: string | undefined): string {
  const id = createHash('sha256').update(resolve(stateFile)).digest('hex').slice(0, 8)
  // A Redis Cluster needs the hash tag (settings.ts says why).
  return redisUrl?.startsWith('redis+cluster://')
    ? `{feedrunner-dev-${id}}`
    : `feedrunner-dev-${id}`
}

/** Starts a stack; `service` names the logger of a process that serves (dev), whose stdout is its log. */
export async function startStack(
  overrides: Record<string, string>,
  options: DevStackOptions,
  service?: string,
): Promise<{ stack: DevStack; logger: Logger }> {
  // Loopback only, whatever EA_HOST says (the container image sets it for the production parts): the
  // dev stack has no authentication and well-known keys. The EA framework reads it from process.env.
  process.env.EA_HOST = '127.0.0.1'
  const env = {
    ...process.env,
    ...Object.fromEntries(Object.entries(overrides).filter(([key]) => !process.env[key])),
  }
  const settings = settingsOrExit(env)
  try {
    const logger = service
      ? serviceLogger(settings, service)
      : createLogger(settings, 'feedrunner-dev')
    if (!service) routeLibraryWarnings(logger)
    return { stack: await startDevStack({ ...options, env, logger }), logger }
  } catch (error) {
    // A taken EA_PORT is named by its setting, as in start.
    const { startFailure } = await import('./start-checks.ts')
    console.error(`feedrunner could not start the dev stack: ${startFailure(error, settings)}`)
    process.exit(1)
  }
}

function printStack(stack: DevStack, say: (text: string) => void): void {
  const { addresses, chainId } = stack.contracts
  say(
    renderTable(
      ['part', 'where'],
      [
        ['Redis', stack.redisUrl],
        ['chain (anvil)', `${stack.rpcUrl} (chain id ${chainId})`],
        ['LinkToken', addresses.linkToken],
        ['Operator', addresses.operator],
        ['FeedConsumer', addresses.consumer],
        ['AuthorizedForwarder', `${addresses.forwarder} (jobs with forwardingAllowed)`],
        ...pushRows(stack),
        ['node address', addresses.nodes.join(', ')],
        ['feed service', `${stack.feedServer.url} (blockchain "local" = this chain)`],
        ['adapter', `${stack.adapter.url} (bridge "datafeed")`],
        ['queue prefix', stack.settings.QUEUE_PREFIX],
        ['metrics', stack.metricsUrl],
        ['health', `${stack.healthUrl}, ${stack.adapter.url}/live`],
        ...(stack.settings.DASHBOARD_ENABLED
          ? [
              [
                'dashboard',
                `${stack.adapter.url}${stack.settings.DASHBOARD_PATH} (queues: ${stack.adapter.url}${stack.settings.DASHBOARD_PATH}/queues)`,
              ],
            ]
          : []),
      ],
    ),
  )
  const jobs = stack.runner?.registry.jobs ?? []
  say(`\n${jobs.length} jobs from ${stack.settings.JOBS_DIR}:`)
  const undrivable: string[] = []
  say(
    renderTable(
      ['job', 'externalJobID', 'answer', 'request parameters'],
      jobs.map((loaded) => {
        const id = `${loaded.externalJobId}${loaded.job.externalJobIDDerived ? ' (derived)' : ''}`
        // A push job is not requested: it writes on its own (cron, fluxmonitor) or when called.
        if (loaded.job.spec.type !== 'directrequest')
          return [loaded.name, id, `${loaded.job.spec.type}: ${pushTarget(loaded)}`, '-']
        const driven = drivableShape(loaded.job)
        if (!driven.ok) undrivable.push(driven.reason)
        return [
          loaded.name,
          id,
          driven.ok ? answerLabel(driven.shape.answer) : '-',
          driven.ok ? driven.shape.params.join(', ') : '-',
        ]
      }),
    ),
  )
  // The runner serves these as their specs say; only the dev tools cannot make requests for them.
  for (const line of undrivable) say(line)
}

/** The push feeds' contracts, when the stack runs the push jobs of jobs/push/. */
function pushRows(stack: DevStack): string[][] {
  const push = stack.pushContracts
  if (!push) return []
  return [
    ['PushedValue (cron)', `${push.cron} (a floor price every 5 s; latestRoundData)`],
    ['PushedValue (webhook)', `${push.webhook} (a floor price per call)`],
    ['FluxAggregator', `${push.aggregator} (oracle ${push.oracle}, funded with LINK)`],
  ]
}

/** Where a push job writes: its ethtx's `to`, or a fluxmonitor job's aggregator. */
function pushTarget(loaded: LoadedJob): string {
  const spec = loaded.job.spec
  if (spec.type === 'fluxmonitor') return `submits to ${spec.contractAddress}`
  const to = loaded.job.tasks.find((task) => task.type === 'ethtx')?.attributes.to
  return to ? `writes to ${to}` : 'sends no transaction'
}

/** The PushedValues of the cron and webhook push jobs, by the name of the job that writes each. */
function pushedValues(stack: DevStack, push: PushContracts): DevState['pushedValues'] {
  return DEV_PUSH_FEEDS.filter((feed) => feed.contract !== 'aggregator').map((feed) => ({
    job:
      stack.runner?.allJobs.jobs.find((job) => job.externalJobId === feed.externalJobId)?.name ??
      `jobs/push/${feed.file}`,
    address: push[feed.contract],
  }))
}
