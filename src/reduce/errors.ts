import { FeedrunnerError } from '../config/errors.ts'
/**
 * Every failure of path evaluation or casting is a ReduceError: callers (the adapter answers 400,
 * the pipeline fails the task) can tell it from a bug, and the message always names the path.
 */
export type ReduceErrorCode =
  | 'BAD_PATH' // the path itself cannot be parsed
  | 'NO_VALUE' // the path does not lead to a value (a missing key, an index out of range)
  | 'WRONG_SHAPE' // the path does not fit the document (a field of a number, a name as an array index)
  | 'BAD_TYPE' // an unknown target type was asked for
  | 'BAD_TIMES' // `times` is not a finite decimal
  | 'CAST' // the value cannot be cast to the target type
  | 'OVER_BUDGET' // the path visits or returns more values than PATH_MAX_VALUES allows

/** Characters of a value a message repeats: a request's 100,000-digit `times` is not sent back whole. */
const SHOWN_CHARS = 64

/** `text`, or its first SHOWN_CHARS characters and how long it was. */
export function cut(text: string, max = SHOWN_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}... (${text.length} characters)` : text
}

/** A value as a message shows it: quoted, cut. */
export function quoted(value: unknown): string {
  return JSON.stringify(cut(String(value)))
}

export class ReduceError extends FeedrunnerError {
  override readonly name = 'ReduceError'
  constructor(
    override readonly code: ReduceErrorCode,
    /** What was wrong, without the path. */
    readonly reason: string,
    readonly path?: string,
  ) {
    super(path === undefined ? reason : `path ${cut(path)}: ${reason}`, {
      kind: 'bad_input',
      ...(code === 'OVER_BUDGET' ? { bound: 'PATH_MAX_VALUES' } : {}),
    })
  }

  /** The same error, now saying which path produced the value (casts do not know it). */
  withPath(path: string): ReduceError {
    return this.path === undefined ? new ReduceError(this.code, this.reason, path) : this
  }
}
