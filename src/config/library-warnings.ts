import { format } from 'node:util'

/** How many distinct lines a process remembers having said; past that, each is said again. */
const REMEMBERED = 1_000

export interface WarningLog {
  warn(fields: Record<string, unknown>, message: string): void
}

export interface OutputLog {
  info(fields: Record<string, unknown>, message: string): void
}

type ConsoleMethod = 'warn' | 'log' | 'info' | 'debug'

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
  return routeConsole(target, ['warn'], (text) => log.warn({ from: 'library' }, text))
}

/**
 * In a service process whose log is JSON (stdout is not a terminal), what a library prints with
 * console.log, console.info or console.debug becomes a log line too, each distinct text once: a log
 * shipper reading stdout gets one JSON object a line, and nothing a library prints breaks it. The
 * process's own lines go through its logger. Answers the function that puts the methods back.
 */
export function routeLibraryOutput(
  log: OutputLog,
  target: Pick<Console, 'log' | 'info' | 'debug'> = console,
): () => void {
  return routeConsole(target, ['log', 'info', 'debug'], (text) =>
    log.info({ from: 'library' }, text),
  )
}

function routeConsole<M extends ConsoleMethod>(
  target: Pick<Console, M>,
  methods: readonly M[],
  write: (text: string) => void,
): () => void {
  const said = new Set<string>()
  const originals = methods.map((method) => [method, target[method]] as const)
  for (const method of methods)
    target[method] = ((...args: unknown[]) => {
      const text = format(...args)
      if (said.has(text)) return
      if (said.size < REMEMBERED) said.add(text)
      write(text)
    }) as Console[M]
  return (): void => {
    for (const [method, original] of originals) target[method] = original
  }
}
