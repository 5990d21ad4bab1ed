import { FeedrunnerError } from '../config/errors.ts'
import {
  answerShapeOf,
  consumerValueType,
  type AnswerShape,
  type ConsumerValueType,
  type Job,
} from '../pipeline/index.ts'

/** What a requester must know to call a job: read from the spec, never restated. */
export interface FeedJobShape {
  /** The adapter endpoint the bridge task asks for, when the spec names one literally. */
  endpoint?: string
  /** The FeedConsumer callback its answer takes: a typed one for one value, else `raw`. */
  answerType: ConsumerValueType
  /** What its fulfilment carries: the Operator method and the answer's types. */
  answer: AnswerShape
  /** Request parameters the job reads from the CBOR request (`$(<cborparse task>.<name>)`), in order. */
  params: string[]
}

/** A job the dev tools (`request`, `demo`) cannot make requests for; the runner may serve it still. */
export class UndrivableJobError extends FeedrunnerError {
  override readonly name = 'UndrivableJobError'
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`${file}: request and demo cannot drive it: ${reason}`, { kind: 'config' })
  }
}

/**
 * Reads a job's shape: the parameters its pipeline takes from the request, the endpoint its bridge
 * calls and what its fulfilment carries (any ethabiencode shape: one word, several, bytes, string,
 * one bytes32 word through fulfillOracleRequest). A job whose fulfilment cannot be read from the spec
 * (no ethtx, data not from an ethabiencode, no request id first) is an UndrivableJobError saying why.
 */
export function feedJobShape(job: Job): FeedJobShape {
  const answer = answerShapeOf(job)
  if (!answer.ok) throw new UndrivableJobError(job.file, answer.reason)
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
  return {
    ...(endpoint ? { endpoint } : {}),
    answerType: consumerValueType(answer.shape),
    answer: answer.shape,
    params,
  }
}

/** The shape, or the one line that says why the dev tools cannot drive the job. */
export function drivableShape(
  job: Job,
): { ok: true; shape: FeedJobShape } | { ok: false; reason: string } {
  try {
    return { ok: true, shape: feedJobShape(job) }
  } catch (error) {
    if (error instanceof UndrivableJobError) return { ok: false, reason: error.message }
    throw error
  }
}
