import { parseSettings, SettingsError, type Settings } from '../config/settings.ts'

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
