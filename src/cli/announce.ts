import type { Logger } from '../config/logger.ts'

/**
 * Says a lifecycle line of a service process (a part started, where it listens, that it stops) in
 * its log, at info even when LOG_LEVEL is warn or error (not when silent): these lines were printed
 * beside the log whatever its level, and a supervisor, a test or an operator waits for them.
 */
export function announce(logger: Logger, fields: Record<string, unknown>, line: string): void {
  const lifecycle =
    logger.isLevelEnabled('info') || logger.level === 'silent'
      ? logger
      : logger.child({}, { level: 'info' })
  lifecycle.info(fields, line)
}
