import type { Settings } from '../config/settings.ts'
import { fetchFeed } from '../feeds/client.ts'
import { FeedParamsError, type CatalogEntry } from '../feeds/catalog/index.ts'
import { UpstreamError, type UpstreamErrorKind } from '../feeds/upstream-error.ts'
import type { FetchFailureInit } from '../queue/fetch-job.ts'
import { FetchFailureError, type FetchFunction } from '../queue/fetch-worker.ts'
import { SIGN_KEY_PLACEHOLDER, SignKeyError } from '../signkey/index.ts'

/** The service answered, but not with a valid envelope or with data of the wrong shape. */
const INVALID_RESPONSES: ReadonlySet<UpstreamErrorKind> = new Set([
  'invalid-json',
  'bad-envelope',
  'data-drift',
])

/** How a failed upstream call is reported through the queue (see FetchFailure). */
export function describeFailure(error: unknown): FetchFailureInit | undefined {
  if (error instanceof UpstreamError) {
    const providerStatus = error.httpStatus
    return {
      kind: error.kind,
      message: error.description,
      retryable: error.retryable,
      ...(providerStatus !== undefined ? { providerStatus } : {}),
      ...(INVALID_RESPONSES.has(error.problem) ? { invalidResponse: true } : {}),
    }
  }
  // The adapter validated the parameters; a worker of another version may disagree.
  // No usable node key (e.g. FEED_API_KEY unset): the message names the setting, never a key.
  // Either way the worker could not run the fetch: `internal`, whatever the error's own kind.
  if (error instanceof FeedParamsError || error instanceof SignKeyError)
    return { kind: 'internal', message: error.message, retryable: false }
  return undefined
}

function asFailure(error: unknown): unknown {
  const failure = describeFailure(error)
  return failure ? new FetchFailureError(failure, error) : error
}

/**
 * The fetch a worker runs for a queued job: `key=##signKey`, which the feeds client replaces with the
 * node's key (static) or a token bound to this job (signed) right before the GET.
 */
export function queuedFetch(settings: Settings): FetchFunction {
  return async (data, context) => {
    try {
      const result = await fetchFeed(
        data.endpoint,
        { ...data.params, key: SIGN_KEY_PLACEHOLDER },
        { settings, requestId: context.jobId },
      )
      return result.envelope
    } catch (error) {
      throw asFailure(error)
    }
  }
}

/** One in-process fetch with a key the client sent (ALLOW_CLIENT_KEYS=true); nothing is queued. */
export function clientKeyFetch(settings: Settings) {
  return async (
    entry: CatalogEntry,
    params: Readonly<Record<string, string>>,
    clientKey: string,
  ): Promise<Record<string, unknown>> => {
    try {
      const result = await fetchFeed(
        entry.name,
        { ...params, key: clientKey },
        { settings, timeoutMs: Math.min(settings.FETCH_TIMEOUT_MS, settings.ADAPTER_TIMEOUT_MS) },
      )
      return result.envelope
    } catch (error) {
      throw asFailure(error)
    }
  }
}
