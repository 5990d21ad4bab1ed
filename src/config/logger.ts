import { pino, type DestinationStream, type Logger } from 'pino'
import { REDACTED, secretScrubber } from './secret-scrub.ts'
import { secretValues } from './secrets.ts'
import { SENSITIVE_SETTINGS, type Settings } from './settings.ts'

export type { Logger }

/** Field names that hold secrets wherever they appear in a log object. */
const SECRET_FIELDS = [
  'key',
  'apiKey',
  'privateKey',
  'headers.authorization',
  ...SENSITIVE_SETTINGS,
]

/**
 * The process logger. Secrets are removed by the logger itself: by field name, and by value in the
 * finished line (every secret the process holds, in every form it travels in, case-folded:
 * secret-scrub.ts), so a key that slips into a message or an error text is still never written.
 */
export function createLogger(
  settings: Settings,
  name = 'feedrunner',
  destination?: DestinationStream,
): Logger {
  const scrub = secretScrubber(secretValues(settings))
  const options = {
    name,
    level: settings.LOG_LEVEL,
    redact: { paths: SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]), censor: REDACTED },
    hooks: { streamWrite: scrub },
  }
  if (destination) return pino(options, destination)
  if (logFormat(settings, process.stdout) === 'pretty') {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        // Colours only for a person at a terminal who has not asked for none (no-color.org).
        options: {
          colorize: process.stdout.isTTY === true && settings.NO_COLOR === undefined,
          ignore: 'pid,hostname',
        },
      },
    })
  }
  // Asynchronous writes: under load the lines of one write's wait leave in the next write, instead of a
  // blocking write(2) per line. pino flushes what is left when the process exits.
  return pino(options, pino.destination({ dest: 1, sync: false }))
}

/**
 * LOG_FORMAT when it is set; otherwise pretty for a person at a terminal and JSON for a pipe, a
 * file or a container log, which a program reads (and where colour codes would be noise).
 */
export function logFormat(
  settings: Pick<Settings, 'LOG_FORMAT'>,
  stdout: { isTTY?: boolean },
): 'json' | 'pretty' {
  return settings.LOG_FORMAT ?? (stdout.isTTY ? 'pretty' : 'json')
}
