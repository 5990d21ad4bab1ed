import { DecodeBudgetError, NodeBudget } from '../../net/decode-budget.ts'
import { evaluatePath, ReduceError } from '../../reduce/index.ts'
import { JsonTooDeepError, parseJsonLossless } from '../json.ts'
import { DEFAULT_PIPELINE_LIMITS, type PipelineLimits } from '../limits.ts'
import { parseBoolText } from '../literals.ts'
import {
  optionalBoolean,
  TaskError,
  withCause,
  type TaskDefinition,
  type TaskRun,
} from '../task.ts'
import { wholeVarExpression } from '../vars.ts'

/**
 * jsonparse(data, path, separator, lax, allowJSONPath). The path is Chainlink's: split on `separator`
 * (default ","), never guessed from dots, so `data,result` and `a.b` (one key "a.b") mean what they
 * mean on a node. A path written in the spec that starts with `$` is JSONPath (src/reduce), feedrunner's
 * own extension. A path from a variable (`path="$(decode_cbor.path)"`, chosen by whoever made the
 * request) is read as a node reads it, keys split on the separator, `$` included, unless the spec says
 * `allowJSONPath="true"` for the task (written there, never a variable); `allowJSONPath="false"` reads
 * a written `$` path as keys too. Either way the evaluation visits and returns at most PATH_MAX_VALUES
 * values. Negative array indices count from the end.
 * Field aliases of the run context (the catalog's) resolve in both directions.
 * Numbers a double cannot hold exactly (wei amounts, long decimals) keep their value (bigint, Decimal):
 * a node reads them as float64 and would lose digits here.
 * `lax="true"`: a missing key or an index out of range gives null instead of an error; as on a node,
 * a path that does not fit the document (a field of a number, a name used on an array) still fails.
 * Nesting deeper than JSON_MAX_DEPTH, numbers of more than 1,000 characters and text that would build
 * more than DECODE_MAX_NODES values are refused (json.ts).
 */
const MAX_JSON_TEXT = 10 * 1024 * 1024

export const jsonparse: TaskDefinition = {
  type: 'jsonparse',
  attributes: ['data', 'path', 'separator', 'lax', 'allowJSONPath'],
  kinds: { lax: 'boolean', allowJSONPath: 'literalBoolean' },
  async run(task) {
    const data = task.value('data', { fromInput: true })
    const limits = task.context.limits ?? DEFAULT_PIPELINE_LIMITS
    const json = parseJson(data, limits)
    const pathValue = task.value('path') ?? ''
    const path = Array.isArray(pathValue) ? pathValue.map(String).join(',') : String(pathValue)
    const separator = String(task.value('separator') ?? ',')
    const lax = optionalBoolean(task, 'lax', false)
    const jsonPath = readsJsonPath(task)
    try {
      return evaluatePath(json, path, {
        separator: jsonPath && path.startsWith('$') ? undefined : separator,
        jsonPath,
        aliases: task.context.aliases,
        maxValues: limits.pathMaxValues,
      })
    } catch (error) {
      if (error instanceof ReduceError && error.code === 'NO_VALUE' && lax) return null
      if (error instanceof ReduceError) throw new TaskError(error.message, withCause(error))
      throw error
    }
  },
}

/** Whether a path starting with `$` is JSONPath here: written so, or opted in for a variable's. */
function readsJsonPath(task: TaskRun): boolean {
  const written = task.raw('allowJSONPath')?.trim()
  if (written !== undefined && written !== '') {
    const allowed = parseBoolText(written)
    if (allowed === undefined)
      throw new TaskError(
        `allowJSONPath must be true or false written in the spec, got ${JSON.stringify(written.slice(0, 40))}`,
        { kind: 'config' },
      )
    return allowed
  }
  return wholeVarExpression(task.raw('path') ?? '') === undefined
}

function parseJson(data: unknown, limits: PipelineLimits): unknown {
  if (typeof data === 'string' || data instanceof Uint8Array) {
    const text = typeof data === 'string' ? data : new TextDecoder().decode(data)
    if (text.length > MAX_JSON_TEXT)
      throw new TaskError(`data is longer than ${MAX_JSON_TEXT} characters`)
    try {
      return parseJsonLossless(
        text,
        limits.jsonMaxDepth,
        new NodeBudget(limits.decodeMaxNodes, 'data (JSON)'),
      )
    } catch (error) {
      if (error instanceof DecodeBudgetError) throw new TaskError(error.message, { cause: error })
      const reason = (error as Error).message
      // The depth bound is a setting: the message names it.
      const deep = error instanceof JsonTooDeepError
      throw new TaskError(`data is not JSON: ${reason}${deep ? ' (JSON_MAX_DEPTH)' : ''}`, {
        ...(deep ? { bound: 'JSON_MAX_DEPTH' } : {}),
      })
    }
  }
  if (data !== null && typeof data === 'object') return data
  throw new TaskError(`data must be JSON text, got ${data === null ? 'null' : typeof data}`)
}
