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

export class ReduceError extends FeedrunnerError {
  override readonly name = 'ReduceError'
  constructor(
    readonly code: ReduceErrorCode,
    /** What was wrong, without the path. */
    readonly reason: string,
    readonly path?: string,
  ) {
    super(path === undefined ? reason : `path ${path}: ${reason}`, { kind: 'bad_input' })
  }

  /** The same error, now saying which path produced the value (casts do not know it). */
  withPath(path: string): ReduceError {
    return this.path === undefined ? new ReduceError(this.code, this.reason, path) : this
  }
}
