import { FeedrunnerError, type FeedrunnerErrorOptions } from '../config/errors.ts'

/**
 * A task failure. `retryable` lets `retries` try again (network errors, 5xx); bad input is final.
 * Without a kind it is `bad_input`: the task's input or attributes are not what it needs.
 */
export class TaskError extends FeedrunnerError {
  override readonly name = 'TaskError'
  constructor(message: string, options: Partial<FeedrunnerErrorOptions> = {}) {
    super(message, { ...options, kind: options.kind ?? 'bad_input' })
  }
}

/** A task that took longer than its `timeout` (`timeoutMs`): where it ran does not change it. */
export function taskTimedOut(timeoutMs: number): TaskError {
  return new TaskError(`timed out after ${timeoutMs} ms`, {
    kind: 'timeout',
    bound: 'task timeout',
  })
}
