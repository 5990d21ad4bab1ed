import { reasonOf } from '../config/dependency-health.ts'
import { rootCauseFirst } from '../config/errors.ts'
import type { Logger } from '../config/logger.ts'
import type { Connections } from '../queue/connections.ts'
import { parseSettings, SettingsError, type Settings } from '../config/settings.ts'
import type { OperationsServer, OperationsServerOptions } from '../health/server.ts'
import { announce } from './announce.ts'
import { exposureWarning, type Served } from './exposure.ts'

/** The settings from the environment, or a message naming the bad variable and exit code 1. */
export function settingsOrExit(env: NodeJS.ProcessEnv = process.env): Settings {
  try {
    return parseSettings(env)
  } catch (error) {
    console.error(error instanceof SettingsError ? error.message : String(error))
    process.exit(1)
  }
}

/** A started part of a process: what its composition root closes on shutdown. */
export interface RunningPart {
  name: string
  close(): Promise<void>
  /** The servers it listens with, for the warning of what a bind beyond loopback exposes. */
  served?: readonly Served[]
}

/** Says once, at warn, what the process's servers off loopback give anyone who reaches the host. */
export function warnIfExposed(
  settings: Settings,
  logger: Logger,
  parts: readonly RunningPart[],
): void {
  const served = parts.flatMap((part) => part.served ?? [])
  const warning = exposureWarning(settings, served)
  if (warning)
    logger.warn(
      { exposed: served.filter((server) => !server.loopback).map((server) => server.listening) },
      warning,
    )
}

/**
 * How long the parts get to finish what they hold (a fetch, a run's step) after SIGTERM before the
 * connections close under them: BullMQ hands a job that was cut short to another worker once its
 * lock expires, so nothing is lost, and the process is gone within 2 s whatever state it is in
 * (Redis away included).
 */
const GRACE_MS = 1_500
const EXIT_LIMIT_MS = 1_900

/**
 * Serves until SIGINT/SIGTERM, then closes the parts newest first, then the connections; whatever
 * has not closed after GRACE_MS has its connections closed under it, and the process exits by
 * EXIT_LIMIT_MS in any case.
 */
export function serveUntilSignal(
  logger: Logger,
  parts: readonly RunningPart[],
  connections: Connections,
): void {
  onStopSignal((signal) => {
    logger.info({ signal }, 'stopping')
    setTimeout(() => process.exit(0), EXIT_LIMIT_MS).unref()
    const graceful = (async () => {
      for (const part of [...parts].reverse())
        await part
          .close()
          .catch((error: unknown) =>
            logger.warn({ part: part.name, err: reasonOf(error) }, 'close failed'),
          )
    })()
    void Promise.race([graceful, delay(GRACE_MS)])
      .then(() => connections.close())
      .then(() => Promise.race([graceful, delay(EXIT_LIMIT_MS - GRACE_MS - 100)]))
      .finally(() => process.exit(0))
  })
  exitOnUnhandledRejection(logger)
}

/**
 * Runs `stop` on the first SIGINT or SIGTERM (or a call of the function it answers). Later signals
 * are taken, and ignored, while it runs: left to Node's default action, the second SIGINT of two at
 * once (`kill -INT` to npm and to its node, npm passing its own on) ended the process before it had
 * stopped a dev stack's redis-server and anvil, which stayed running under PID 1.
 */
export function onStopSignal(stop: (signal: NodeJS.Signals) => void): () => void {
  let stopping = false
  const once = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    stop(signal)
  }
  process.on('SIGINT', once)
  process.on('SIGTERM', once)
  return () => once('SIGTERM')
}

/**
 * A promise that rejects with nothing listening is a bug. Node ends the process then, with a stack
 * trace on stderr, outside the log an operator reads (a runner died this way after a FLUSHALL, and
 * its log said nothing). It still ends: what the process held is in Redis, and another process or
 * its restart takes it over. But the log says why first, root cause first, with where it arose.
 */
export function exitOnUnhandledRejection(logger: Logger): void {
  process.once('unhandledRejection', (reason) => {
    logger.fatal(
      {
        err: rootCauseFirst(reason),
        at: reason instanceof Error ? reason.stack?.split('\n').slice(1, 4).join(' <') : undefined,
      },
      'a promise rejected with nothing to handle it (a bug: please report this line); the process exits, and what it held is taken over',
    )
    process.exit(1)
  })
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

/**
 * On SIGINT/SIGTERM: `stop()`, then exit; a stop that hangs is cut off after 10 s. With
 * `withParent`, also when the parent process goes (its children are re-parented): a dev stack whose
 * `npm start` was killed does not stay behind with anvil and redis-server.
 */
export function stopOnSignal(
  stop: () => Promise<void>,
  onStopping?: () => void,
  options: { withParent?: boolean } = {},
): void {
  const handler = onStopSignal(() => {
    onStopping?.()
    const force = setTimeout(() => process.exit(1), 10_000)
    force.unref()
    void stop().finally(() => process.exit(0))
  })
  if (options.withParent) {
    const parent = process.ppid
    setInterval(() => {
      if (process.ppid !== parent) handler()
    }, PARENT_CHECK_MS).unref()
  }
}

/** How often a process that stops with its parent looks whether the parent is still there. */
const PARENT_CHECK_MS = 1_000

/**
 * /metrics, /live and /ready on OPERATIONS_PORT, for a process that runs no adapter (an adapter
 * process serves them on its own ports); undefined when OPERATIONS_PORT=0.
 */
export async function startOperationsPort(
  settings: Settings,
  logger: Logger,
  routes?: OperationsServerOptions['routes'],
): Promise<OperationsServer | undefined> {
  if (settings.OPERATIONS_PORT === 0) return undefined
  // Loaded here: the commands that share this file start without fastify.
  const { startOperationsServer } = await import('../health/server.ts')
  let server: OperationsServer
  try {
    server = await startOperationsServer({
      port: settings.OPERATIONS_PORT,
      host: settings.EA_HOST,
      routes,
    })
  } catch (error) {
    // A second runner or worker on one host must still run; it only lacks its own /metrics.
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
    logger.error(
      { port: settings.OPERATIONS_PORT },
      'OPERATIONS_PORT is in use: this process serves no /metrics, /live or /ready',
    )
    console.error(
      `OPERATIONS_PORT ${settings.OPERATIONS_PORT} is in use: this process serves no metrics or health; give each process on this host its own OPERATIONS_PORT`,
    )
    return undefined
  }
  // prom-client loads with the metrics it serves, not with every command that reads the settings.
  ;(await import('../metrics/registry.ts')).collectProcessMetrics()
  announce(
    logger,
    { listening: server.listening },
    `metrics ${server.listening}/metrics, health ${server.listening}/ready and ${server.listening}/live`,
  )
  return server
}

/** The operations server as a part of its process. */
export function operationsRunning(server: OperationsServer): RunningPart {
  return {
    name: 'operations',
    close: () => server.close(),
    served: [{ listening: server.listening, loopback: server.loopback, what: 'metrics' }],
  }
}
