import {
  AdapterError,
  AdapterInputError,
  AdapterTimeoutError,
} from '@chainlink/external-adapter-framework/validation/error.js'
import type { ErrorKind } from '../config/errors.ts'
import type { FetchFailure } from '../queue/fetch-job.ts'
import { FetchWaitTimeoutError, QueueUnavailableError } from '../queue/fetch-queue.ts'
import { ReduceError } from '../reduce/index.ts'
import { isRedisUnavailable } from '../queue/connection.ts'

/** Kinds of a failure that come from the feed service (it answered an error or did not answer). */
const SERVICE_KINDS: ReadonlySet<ErrorKind> = new Set([
  'upstream',
  'timeout',
  'unavailable',
  'not_authorised',
  'bad_input',
])

/**
 * The answer to a failed fetch:
 * - the feed service refused the request (4xx, not retried): its status and its own description;
 * - it could not be reached (connection refused, reset, no such host) after every attempt: 503;
 * - it kept failing (5xx, timeouts) after every attempt: 502 with its words;
 * - it answered something that is not a valid envelope or data of the wrong shape: 502;
 * - the worker could not run the fetch: 500.
 */
export function failureError(endpoint: string, failure: FetchFailure): AdapterError {
  const providerStatusCode = failure.providerStatus
  const fromService = SERVICE_KINDS.has(failure.kind)
  if (failure.invalidResponse === true) {
    return expected(
      new AdapterError({
        statusCode: 502,
        name: 'FeedServiceInvalidResponse',
        message: `The feed service answered the ${endpoint} request with an invalid response: ${failure.message}`,
      }),
    )
  }
  if (
    fromService &&
    !failure.retryable &&
    providerStatusCode !== undefined &&
    providerStatusCode >= 400 &&
    providerStatusCode < 500
  ) {
    return expected(
      new AdapterError({
        statusCode: providerStatusCode,
        providerStatusCode,
        name: 'FeedServiceRefused',
        message: `The feed service refused the ${endpoint} request (${providerStatusCode}): ${failure.message}`,
      }),
    )
  }
  if (fromService) {
    const attempts = failure.attempts === 1 ? '1 attempt' : `${failure.attempts} attempts`
    // Not reached at all (refused, reset, no such host): the service is away, and a caller may try
    // again later (the runner hands the request back to its queue on a 503 and retries it with
    // backoff, so a feed service restarting loses no request).
    if (failure.kind === 'unavailable' && providerStatusCode === undefined)
      return expected(
        new AdapterError({
          statusCode: 503,
          name: 'FeedServiceUnavailable',
          message: `The feed service could not be reached for the ${endpoint} request after ${attempts}: ${failure.message}`,
        }),
      )
    return expected(
      new AdapterError({
        statusCode: 502,
        ...(providerStatusCode !== undefined ? { providerStatusCode } : {}),
        name: 'FeedServiceFailed',
        message: `The feed service failed the ${endpoint} request after ${attempts}: ${failure.message}`,
      }),
    )
  }
  return new AdapterError({
    statusCode: 500,
    name: 'FetchError',
    message: `The ${endpoint} fetch could not be run: ${failure.message}`,
  })
}

/**
 * An answer the feed service gave is part of the adapter's job, not a fault in its code: its stack is
 * its one line, so the framework's log line for it carries no trace (its frames say nothing).
 */
function expected(error: AdapterError): AdapterError {
  error.stack = `${error.name}: ${error.message}`
  return error
}

/** The parameter a reduction error is about, for the 400's message. */
function reduceParam(error: ReduceError): string {
  switch (error.code) {
    case 'BAD_TIMES':
      return 'times'
    case 'BAD_TYPE':
    case 'CAST':
      return 'type'
    default:
      return 'path'
  }
}

/** Maps what went wrong while serving a request to the framework error with the right status. */
export function toAdapterError(endpoint: string, error: unknown): AdapterError {
  if (error instanceof AdapterError) return error
  if (error instanceof ReduceError)
    return new AdapterInputError({
      statusCode: 400,
      message: `[Param: ${reduceParam(error)}] ${error.message}`,
    })
  if (error instanceof FetchWaitTimeoutError)
    return new AdapterTimeoutError({ statusCode: 504, message: error.message })
  if (error instanceof QueueUnavailableError)
    return new AdapterError({ statusCode: 503, name: 'RedisUnavailable', message: error.message })
  if (isRedisUnavailable(error)) {
    return new AdapterError({
      statusCode: 503,
      name: 'RedisUnavailable',
      message: `Redis is unavailable (${(error as Error).message}); retry when Redis is back`,
    })
  }
  const message = error instanceof Error ? error.message : String(error)
  return new AdapterError({
    statusCode: 500,
    name: 'AdapterError',
    message: `The ${endpoint} request failed: ${message}`,
  })
}
