import { DEFAULT_PIPELINE_LIMITS } from '../limits.ts'
import { TaskError, type TaskRun } from '../task.ts'
import type { ResponseCap } from './http-client.ts'

/** Each task type's cap, its setting (named in the message when a body is over it). */
const CAP_SETTING = {
  http: 'HTTP_TASK_MAX_RESPONSE_BYTES',
  bridge: 'BRIDGE_MAX_RESPONSE_BYTES',
} as const

/**
 * The byte cap for a task's response body: the spec's `maxResponseBytes` when written as a number,
 * else the setting. A variable is refused there: whoever makes a request must not lift the cap.
 */
export function responseCap(task: TaskRun, type: keyof typeof CAP_SETTING): ResponseCap {
  const written = task.raw('maxResponseBytes')?.trim()
  if (written !== undefined && written !== '') {
    if (!/^[1-9]\d{0,9}$/.test(written))
      throw new TaskError(
        `maxResponseBytes must be a whole number of bytes written in the spec, got ${JSON.stringify(written.slice(0, 40))}`,
        { kind: 'config' },
      )
    return { maxBytes: Number(written), source: `the task's maxResponseBytes` }
  }
  const limits = task.context.limits ?? DEFAULT_PIPELINE_LIMITS
  return {
    maxBytes: type === 'http' ? limits.httpMaxResponseBytes : limits.bridgeMaxResponseBytes,
    source: CAP_SETTING[type],
  }
}
