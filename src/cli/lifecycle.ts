import type { Logger } from '../config/logger.ts'
import { parseSettings, SettingsError, type Settings } from '../config/settings.ts'
import type { OperationsServer } from '../health/server.ts'
import { collectProcessMetrics } from '../metrics/registry.ts'

/** The settings from the environment, or a message naming the bad variable and exit code 1. */
export function settingsOrExit(env: NodeJS.ProcessEnv = process.env): Settings {
  try {
    return parseSettings(env)
  } catch (error) {
    console.error(error instanceof SettingsError ? error.message : String(error))
    process.exit(1)
  }
}

/** On SIGINT/SIGTERM: `stop()`, then exit; a stop that hangs is cut off after 10 s. */
export function stopOnSignal(stop: () => Promise<void>, announce?: string): void {
  let stopping = false
  const handler = () => {
    if (stopping) return
    stopping = true
    if (announce) console.log(announce)
    const force = setTimeout(() => process.exit(1), 10_000)
    force.unref()
    void stop().finally(() => process.exit(0))
  }
  process.once('SIGINT', handler)
  process.once('SIGTERM', handler)
}

/**
 * /metrics, /live and /ready on OPERATIONS_PORT, for a process that runs no adapter (an adapter
 * process serves them on its own ports); undefined when OPERATIONS_PORT=0.
 */
export async function startOperationsPort(
  settings: Settings,
  logger: Logger,
): Promise<OperationsServer | undefined> {
  if (settings.OPERATIONS_PORT === 0) return undefined
  // Loaded here: the commands that share this file start without fastify.
  const { startOperationsServer } = await import('../health/server.ts')
  let server: OperationsServer
  try {
    server = await startOperationsServer({ port: settings.OPERATIONS_PORT, logger })
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
  collectProcessMetrics()
  console.log(`metrics ${server.url}/metrics, health ${server.url}/ready and ${server.url}/live`)
  return server
}
