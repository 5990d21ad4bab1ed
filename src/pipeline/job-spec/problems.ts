import { FeedrunnerError } from '../../config/errors.ts'

/** One problem found in a job spec: where (file, line, field or task) and what. */
export interface SpecProblem {
  file: string
  /** 1-based line in the TOML file; undefined when no line can be named. */
  line?: number
  /** 1-based line inside observationSource, for problems of the pipeline. */
  sourceLine?: number
  /** The TOML field the problem belongs to, if any. */
  field?: string
  /** The DOT task id the problem belongs to, if any. */
  task?: string
  /** The job type the spec was read as, once its `type` is one feedrunner runs. */
  jobType?: string
  message: string
}

/** `jobs/x.toml:14 (observationSource line 3): task fetch: <message>`. */
export function formatProblem(problem: SpecProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}`
  const inSource =
    problem.sourceLine === undefined ? '' : ` (observationSource line ${problem.sourceLine})`
  const task = problem.task === undefined ? '' : ` task ${problem.task}:`
  return `${where}${inSource}:${task} ${problem.message}`
}

/** Thrown by parseJobSpecFile when a spec has problems; carries all of them (the operator's setup). */
export class SpecError extends FeedrunnerError {
  override readonly name = 'SpecError'
  constructor(readonly problems: readonly SpecProblem[]) {
    super(problems.map(formatProblem).join('\n'), { kind: 'config' })
  }
}
