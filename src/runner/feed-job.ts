import type { Job } from '../pipeline/index.ts'

/** FeedConsumer's answer types (its ValueType enum order), as a job's encoding task names them. */
export const ANSWER_TYPES = ['uint256', 'int256', 'bool', 'string', 'bytes32', 'bytes'] as const
export type AnswerType = (typeof ANSWER_TYPES)[number]

/** What a requester must know to call a datafeed job: read from the spec, never restated. */
export interface FeedJobShape {
  /** The adapter endpoint the bridge task asks for, when the spec names one literally. */
  endpoint?: string
  /** The answer type the job ABI-encodes for the callback. */
  answerType: AnswerType
  /** Request parameters the job reads from the CBOR request (`$(<cborparse task>.<name>)`), in order. */
  params: string[]
}

/**
 * Reads a datafeed job's shape: the parameters its pipeline takes from the request, the endpoint its
 * bridge calls and the type it delivers (the `value` of the `(bytes32 requestId, <type> value)` encoding).
 */
export function feedJobShape(job: Job): FeedJobShape {
  const cborTasks = job.tasks.filter((task) => task.type === 'cborparse').map((task) => task.id)
  const params: string[] = []
  let endpoint: string | undefined
  for (const task of job.tasks) {
    for (const value of Object.values(task.attributes)) {
      for (const match of value.matchAll(/\$\(\s*([A-Za-z0-9_-]+)\.([A-Za-z0-9_]+)\s*\)/g)) {
        if (cborTasks.includes(match[1] as string) && !params.includes(match[2] as string))
          params.push(match[2] as string)
      }
    }
    if (task.type === 'bridge')
      endpoint ??= /\\?"endpoint\\?"\s*:\s*\\?"([a-z0-9-]+)\\?"/.exec(
        task.attributes.requestData ?? '',
      )?.[1]
  }
  const answerType = job.tasks
    .filter((task) => task.type === 'ethabiencode')
    .map(
      (task) =>
        /^\s*\(\s*bytes32\s+\w+\s*,\s*(\w+)\s+\w+\s*\)\s*$/.exec(task.attributes.abi ?? '')?.[1],
    )
    .find((type): type is AnswerType => (ANSWER_TYPES as readonly string[]).includes(type ?? ''))
  if (!answerType)
    throw new Error(
      `${job.file}: no ethabiencode task of the form "(bytes32 requestId, <type> value)": cannot tell the answer type`,
    )
  return { ...(endpoint ? { endpoint } : {}), answerType, params }
}
