import { chainsFromSettings } from '../config/chains.ts'
import { reasonOf } from '../config/dependency-health.ts'
import { rootCauseFirst } from '../config/errors.ts'
import { rawKeyVariables, withKeystoreKeys } from '../config/keystore.ts'
import type { Logger } from '../config/logger.ts'
import { endpointOf, SettingsError, type Settings } from '../config/settings.ts'
import { connectClient } from '../queue/connection.ts'
import { loadJobRegistry } from '../runner/job-registry.ts'

/**
 * What a serving process (`start`, `adapter`, `worker`, `runner`) checks before a port opens or a
 * connection is tried: the settings (parsed already), the keys (keystores opened), the chains and the
 * job specs of a runner, then Redis, waited for a bounded time. Each failure is one line on stderr
 * and exit code 1: "adapter listening" no longer printed before a runner setting stopped the start.
 */

/**
 * The settings with KEYSTORE_DIR's keys opened, or the problem in one line and exit code 1. Only a
 * process that signs opens them (`signs`: it runs a runner, or signs ##signKey tokens): a fetch
 * worker or an adapter in static mode needs neither the keys nor their password.
 */
export function settingsWithKeys(settings: Settings, signs: boolean): Settings {
  if (!signs && settings.SIGNKEY_MODE !== 'signed') return settings
  try {
    return withKeystoreKeys(settings)
  } catch (error) {
    exitWith(error)
  }
}

/**
 * What the runner will need, checked before anything starts: its chains (CHAINS_FILE or RPC_URL, and
 * the keys of each) and every spec in JOBS_DIR. Raw keys in the environment still sign, with one
 * warning: keystores keep them encrypted at rest.
 */
export async function checkRunnerSettings(
  settings: Settings,
  logger: Logger,
  required = false,
): Promise<void> {
  try {
    const chains = chainsFromSettings(settings)
    if (chains.length === 0 && required)
      throw new SettingsError(['RPC_URL: required for the runner, or CHAINS_FILE (not set)'])
    if (chains.length === 0) return
    await loadJobRegistry(settings.JOBS_DIR)
    const raw = rawKeyVariables(settings)
    if (!settings.KEYSTORE_DIR)
      logger.warn(
        { keys: raw.length > 0 ? raw : ['CHAINS_FILE keys_env'] },
        `the runner signs with raw keys from the environment (${raw.join(', ') || 'CHAINS_FILE keys_env'}): keep them encrypted instead, feedrunner keys import --private-key-env <variable>, then KEYSTORE_DIR and KEYSTORE_PASSWORD_FILE (docs/operating.md)`,
      )
  } catch (error) {
    exitWith(error)
  }
}

/**
 * Waits up to REDIS_START_WAIT_MS for Redis to answer (it may come up just after the process, as in a
 * container's start): one line while it waits, one line and exit code 1 if it never does, instead of
 * every part's connection printing its own error many times over.
 */
export async function waitForRedis(settings: Settings, process_ = 'feedrunner'): Promise<void> {
  const deadline = Date.now() + settings.REDIS_START_WAIT_MS
  let said = false
  for (;;) {
    try {
      const redis = await connectClient(settings.REDIS_URL, 2_000)
      redis.disconnect()
      return
    } catch (error) {
      const reason = reasonOf((error as Error).cause ?? error)
      if (Date.now() >= deadline) {
        console.error(
          `${process_} could not start: Redis does not answer at REDIS_URL ${endpointOf(settings.REDIS_URL)} (${reason}; waited ${Math.round(settings.REDIS_START_WAIT_MS / 1000)} s): start it, or set REDIS_URL to one that runs`,
        )
        process.exit(1)
      }
      if (!said)
        console.error(
          `waiting up to ${Math.round(settings.REDIS_START_WAIT_MS / 1000)} s for Redis at REDIS_URL ${endpointOf(settings.REDIS_URL)} (${reason})`,
        )
      said = true
      await new Promise((resolveWait) => setTimeout(resolveWait, 500))
    }
  }
}

/** The port settings a serving process listens on, to name the one that is taken. */
const PORT_SETTINGS = ['EA_PORT', 'METRICS_PORT', 'OPERATIONS_PORT'] as const

/**
 * Why a part could not start, in one line: a port that is taken is named by its setting (the EA
 * framework's metrics server said only "EADDRINUSE :::9080").
 */
export function startFailure(error: unknown, settings: Settings, env = process.env): string {
  const code = (error as NodeJS.ErrnoException).code
  const port = (error as { port?: unknown }).port
  if (code === 'EADDRINUSE' && typeof port === 'number') {
    const named = PORT_SETTINGS.filter((name) => settingPort(name, settings, env) === port)
    const setting = named.join(' and ') || `port ${port}`
    return `${setting} ${named.length > 0 ? `${port} ` : ''}is in use (another process listens there): give ${named[0] ?? 'the part'} a free port${named[0] === 'METRICS_PORT' ? ', or METRICS_ENABLED=false' : ''}`
  }
  return error instanceof SettingsError ? error.problems.join('\n') : rootCauseFirst(error)
}

function settingPort(
  name: (typeof PORT_SETTINGS)[number],
  settings: Settings,
  env: NodeJS.ProcessEnv,
): number {
  // The EA framework reads its own METRICS_PORT from the environment; the schema holds its default.
  return name === 'METRICS_PORT' && env.METRICS_PORT ? Number(env.METRICS_PORT) : settings[name]
}

function exitWith(error: unknown): never {
  console.error(error instanceof SettingsError ? error.message : rootCauseFirst(error))
  process.exit(1)
}
