import type { Logger } from '../config/logger.ts'

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
 * The logger factory handed to the EA framework: each layer's child of the process logger, except that
 * the error-catching layer's lines about an outage answer go to debug (see OUTAGE_ANSWERS).
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
      child.warn = ((first: unknown, ...rest: unknown[]) =>
        isOutageAnswer(first)
          ? child.debug(first as object, ...(rest as []))
          : warn(first as object, ...(rest as []))) as Logger['warn']
      return child
    },
  }
}
