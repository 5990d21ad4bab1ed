import type { Settings } from '../config/settings.ts'
import { fetchFeed } from '../feeds/client.ts'
import { FeedParamsError, type CatalogEntry } from '../feeds/catalog/index.ts'
import { UpstreamError } from '../feeds/upstream-error.ts'
import type { FetchFailure } from '../queue/fetch-job.ts'
import { FetchFailureError, type FetchFunction } from '../queue/fetch-worker.ts'
import { SIGN_KEY_PLACEHOLDER, SignKeyError } from '../signkey/index.ts'

/** How a failed upstream call is reported through the queue (see FetchFailure). */
export function describeFailure(error: unknown): Omit<FetchFailure, 'attempts'> | undefined {
  if (error instanceof UpstreamError) {
    const providerStatus = error.httpStatus
    const base = {
      description: error.description,
      retryable: error.retryable,
      ...(providerStatus !== undefined ? { providerStatus } : {}),
    }
    switch (error.kind) {
      case 'timeout':
      case 'network':
      case 'upstream-error':
        return { kind: 'upstream', ...base }
      case 'invalid-json':
      case 'bad-envelope':
      case 'data-drift':
        return { kind: 'invalid-response', ...base }
    }
  }
  // The adapter validated the parameters; a worker of another version may disagree.
  if (error instanceof FeedParamsError)
    return { kind: 'internal', description: error.message, retryable: false }
  // No usable node key (e.g. FEED_API_KEY unset): the message names the setting, never a key.
  if (error instanceof SignKeyError)
    return { kind: 'internal', description: error.message, retryable: false }
  return undefined
}

function asFailure(error: unknown): unknown {
  const failure = describeFailure(error)
  return failure ? new FetchFailureError(failure) : error
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
