import { JSONPath } from 'jsonpath-plus'
import { cut, ReduceError } from './errors.ts'

/**
 * The work one path evaluation may do, counted in values: every value it visits (each step of the
 * evaluation, each child it walks) and every value in what it returns (each match with all it holds,
 * so a subtree returned twice counts twice: whatever comes next copies it twice). A length cap bounds
 * what a path says, not what it does: `$` and forty `..*` over a 60-level, 31 kB document multiply
 * without end (three such requests took a dev stack from 252 to 738 MB).
 *
 * A budget is a value made for one evaluation, like the decoders' (src/net/decode-budget.ts).
 */
export const DEFAULT_PATH_MAX_VALUES = 100_000

export class PathBudget {
  private used = 0
  constructor(
    /** The most values the evaluation may visit and return (PATH_MAX_VALUES). */
    readonly max: number,
    readonly path: string,
  ) {}

  /** Counts `count` more values; throws past the budget. */
  take(count = 1): void {
    this.used += count
    if (this.used > this.max)
      throw new ReduceError(
        'OVER_BUDGET',
        `visits and returns more than ${this.max} values (PATH_MAX_VALUES); it was stopped there. A path that reads one field visits a few: name the field, or raise PATH_MAX_VALUES`,
        this.path,
      )
  }

  get count(): number {
    return this.used
  }
}

/** Counts `value` and everything in it against the budget, without copying anything. */
export function takeValues(value: unknown, budget: PathBudget): void {
  const pending: unknown[] = [value]
  while (pending.length > 0) {
    const item = pending.pop()
    budget.take()
    // One at a time: spread into push, a match of ~125,000 entries overflows the call stack.
    if (Array.isArray(item)) for (const entry of item as unknown[]) pending.push(entry)
    else if (item !== null && typeof item === 'object' && !(item instanceof Uint8Array))
      for (const entry of Object.values(item)) pending.push(entry)
  }
}

/** The steps of jsonpath-plus's evaluator every piece of its work goes through. */
interface Evaluator {
  _trace(...args: unknown[]): unknown
  _walk(value: unknown, visit: (key: string | number) => void): void
}

/**
 * Every match of a general JSONPath (wildcards, recursive descent, slices, unions), evaluated by
 * jsonpath-plus with script evaluation off, under `budget`. Its evaluator recurses through `_trace`
 * for each step and `_walk` for each child: counting both, on this evaluation's own instance, bounds
 * work no access to the document shows (a union of `$` parts multiplies without reading anything).
 * test/reduce/path-budget.test.ts fails if a version of the library stops going through them.
 */
export function budgetedJsonPath(json: unknown, path: string, budget: PathBudget): unknown[] {
  // wrap: true so one matched array is not confused with several matches.
  const engine = JSONPath({ path, json: json as object, autostart: false, wrap: true, eval: false })
  const evaluator = engine as unknown as Evaluator
  const { _trace: trace, _walk: walk } = evaluator
  evaluator._trace = function (...args) {
    budget.take()
    return trace.apply(this, args)
  }
  evaluator._walk = function (value, visit) {
    walk.call(this, value, (key) => {
      budget.take()
      visit(key)
    })
  }
  let matches: unknown[]
  try {
    // jsonpath-plus answers undefined (not []) for a falsy document: 0, false, '' or null.
    matches =
      (engine.evaluate(path, json as object, undefined, undefined) as unknown[] | undefined) ?? []
  } catch (error) {
    if (error instanceof ReduceError) throw error
    throw new ReduceError(
      'BAD_PATH',
      `not a valid JSONPath (${cut((error as Error).message, 120)})`,
      path,
    )
  } finally {
    // jsonpath-plus keeps every path it has parsed, for the life of the process: paths chosen by
    // requesters would grow it without end.
    delete (JSONPath as unknown as { cache: Record<string, unknown> }).cache[path]
  }
  const defined = matches.filter((match) => match !== undefined)
  if (defined.length > 1) for (const match of defined) takeValues(match, budget)
  return defined
}
