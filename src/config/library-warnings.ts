import { format } from 'node:util'

/** How many distinct warnings a process remembers having said; past that, each is said again. */
const REMEMBERED = 1_000

export interface WarningLog {
  warn(fields: Record<string, unknown>, message: string): void
}

/**
 * Sends what libraries print with `console.warn` through the process logger, each distinct text
 * once. BullMQ warns so for every Redis connection it opens (a `dev` process printed its eviction
 * warning 32 times, raw on stderr): outside the log's format, its level and its secret scrubbing.
 * feedrunner's own code never calls console.warn. Answers the function that puts console.warn back.
 */
export function routeLibraryWarnings(
  log: WarningLog,
  target: Pick<Console, 'warn'> = console,
): () => void {
  const said = new Set<string>()
  const original = target.warn
  target.warn = (...args: unknown[]) => {
    const text = format(...args)
    if (said.has(text)) return
    if (said.size < REMEMBERED) said.add(text)
    log.warn({ from: 'library' }, text)
  }
  return (): void => {
    target.warn = original
  }
}
