import { FeedrunnerError, reviveErrorText, serialiseError } from '../config/errors.ts'

/**
 * BullMQ keeps a failed job's reason as the thrown error's message. Errors thrown into a queue go in
 * as this wrapper, whose message is the error stored as `{kind, message, retryable, causes}` (JSON),
 * so that whoever reads the failed job (another process, the dashboard) revives the same kind with
 * failedReasonError. Kind, retryable flag and cause stay the wrapped error's in this process.
 */
export function asFailedReason(error: unknown): FeedrunnerError {
  const stored = serialiseError(error)
  return new FeedrunnerError(JSON.stringify(stored), {
    kind: stored.kind,
    retryable: stored.retryable,
    cause: error,
  })
}

/** A failed job's reason back as an error of its kind; a reason BullMQ wrote itself is `internal`. */
export function failedReasonError(reason: string | undefined): FeedrunnerError {
  return reviveErrorText(reason ?? 'failed')
}
