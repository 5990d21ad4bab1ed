import { routeLibraryOutput, routeLibraryWarnings } from '../config/library-warnings.ts'
import { createLogger, logFormat, type Logger } from '../config/logger.ts'
import type { Settings } from '../config/settings.ts'

/**
 * The logger of a service process (start, adapter, worker, runner, feeds serve, dev): what libraries
 * print goes through it, and off a terminal stdout carries its JSON lines and nothing else.
 */
export function serviceLogger(settings: Settings, name: string): Logger {
  const logger = createLogger(settings, name)
  routeLibraryWarnings(logger)
  if (jsonStdout(settings)) routeLibraryOutput(logger)
  return logger
}

/** Whether the process's stdout is its JSON log (not a terminal, or LOG_FORMAT=json). */
export function jsonStdout(settings: Settings): boolean {
  return logFormat(settings, process.stdout) === 'json'
}
