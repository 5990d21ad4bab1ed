import type { Logger } from '../config/logger.ts'
import { bridgeRunOf } from './bridge-identity.ts'
import { boundedText } from './error-bounds.ts'

/**
 * Answers the adapter gives because a dependency is away: the feed service could not be reached (the
 * fetch worker reports that outage, SPORTS_URL and the like), or Redis is down (this process reports
 * it, REDIS_URL). The framework logs every error answer at warn, one line per request; during an
 * outage that is a line per call, so these go to debug and the outage is read from its report.
 */
const OUTAGE_ANSWERS: ReadonlySet<string> = new Set(['FeedServiceUnavailable', 'RedisUnavailable'])

/** The framework's error line: the request context and the error, as ErrorCatchingMiddleware logs it. */
interface ErrorLine {
  error?: { name?: unknown }
}

function isOutageAnswer(line: unknown): boolean {
  const name = (line as ErrorLine | undefined)?.error?.name
  return typeof name === 'string' && OUTAGE_ANSWERS.has(name)
}

/**
 * A log object with every string in it cut to the error bound (error-bounds.ts): the framework logs a
 * failed request's whole data, and a 100 kB parameter made a 400 kB line.
 */
function bounded(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return boundedText(value)
  if (value === null || typeof value !== 'object' || depth > 4) return value
  if (Array.isArray(value)) return value.map((item) => bounded(item, depth + 1))
  if (value instanceof Error)
    return bounded(
      { ...value, name: value.name, message: value.message, stack: value.stack },
      depth,
    )
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [boundedText(key), bounded(item, depth + 1)]),
  )
}

/**
 * The logger factory handed to the EA framework: each layer's child of the process logger, except that
 * the error-catching layer's lines about an outage answer go to debug (see OUTAGE_ANSWERS), and its
 * lines have their strings bounded and name the run they are about (bridgeRunOf).
 */
export function frameworkLoggerFactory(
  logger: Logger,
  options: { metricsServedElsewhere?: boolean } = {},
): {
  child(bindings: { layer: string; color?: string }): Logger
} {
  return {
    child(bindings) {
      const child = logger.child(bindings)
      // The dev stack serves /metrics on the adapter's port with the framework's own server off: the
      // framework's "METRICS_ENABLED has been set to false" warning is wrong there.
      if (options.metricsServedElsewhere && bindings.layer === 'Adapter') {
        const warnAdapter = child.warn.bind(child)
        child.warn = ((first: unknown, ...rest: unknown[]) =>
          typeof first === 'string' && first.startsWith('METRICS_ENABLED has been set to false')
            ? undefined
            : warnAdapter(first as object, ...(rest as []))) as Logger['warn']
      }
      if (bindings.layer !== 'ErrorCatchingMiddleware') return child
      const warn = child.warn.bind(child)
      child.warn = ((first: unknown, ...rest: unknown[]) => {
        const line = {
          ...bridgeRunOf((first as { reqBody?: unknown } | undefined)?.reqBody),
          ...(bounded(first) as object),
        }
        return isOutageAnswer(first)
          ? child.debug(line, ...(rest as []))
          : warn(line, ...(rest as []))
      }) as Logger['warn']
      return child
    },
  }
}
