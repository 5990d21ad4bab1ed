import { pino, type DestinationStream, type Logger } from 'pino'
import type { Settings } from './settings.ts'
import { secretValues } from './settings.ts'

export type { Logger }

const REDACTED = '[redacted]'

/** Field names that hold secrets wherever they appear in a log object. */
const SECRET_FIELDS = [
  'key',
  'apiKey',
  'privateKey',
  'FEED_API_KEY',
  'NODE_PRIVATE_KEY',
  'headers.authorization',
]

/**
 * The process logger. Secrets are removed by the logger itself: by field name, and by value in the
 * finished line, so a key that slips into a message or an error text is still never written.
 */
export function createLogger(
  settings: Settings,
  name = 'feedrunner',
  destination?: DestinationStream,
): Logger {
  const secrets = secretValues(settings)
  const options = {
    name,
    level: settings.LOG_LEVEL,
    redact: { paths: SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]), censor: REDACTED },
    hooks: { streamWrite: (line: string) => scrubSecrets(line, secrets) },
  }
  if (destination) return pino(options, destination)
  if (settings.LOG_FORMAT === 'pretty') {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname' } },
    })
  }
  // Asynchronous writes: under load the lines of one write's wait leave in the next write, instead of a
  // blocking write(2) per line. pino flushes what is left when the process exits.
  return pino(options, pino.destination({ dest: 1, sync: false }))
}

export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let scrubbed = text
  for (const secret of secrets) {
    if (secret.length >= 4) scrubbed = scrubbed.split(secret).join(REDACTED)
  }
  return scrubbed
}
