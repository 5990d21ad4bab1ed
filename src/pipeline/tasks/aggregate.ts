import type { Decimal } from '../../reduce/index.ts'
import { TaskError, type TaskRun } from '../task.ts'
import { decimalOf, integerAttribute } from './convert.ts'

/**
 * The values of median/mean/mode/sum, as Chainlink gathers them: the `values` attribute (a variable or
 * a JSON list whose `$(...)` may point at failed tasks) or else the inputs. Failed entries are faults;
 * more than `allowedFaults` (default: all but one) fails the task, as does having no value at all.
 */
export function gatherValues(task: TaskRun): unknown[] {
  const entries =
    task.raw('values') === undefined
      ? task.inputs.map((input) => (input.ok ? input.value : input.error))
      : listAttribute(task)
  const faults = entries.filter((entry) => entry instanceof Error).length
  // Read as written: Chainlink resolves no variable in allowedFaults.
  const allowed = integerAttribute(
    task.raw('allowedFaults')?.trim(),
    'allowedFaults',
    Math.max(entries.length - 1, 0),
  )
  if (faults > allowed)
    throw new TaskError(
      `${faults} of ${entries.length} values failed, more than allowedFaults ${allowed}`,
    )
  const values = entries.filter((entry) => !(entry instanceof Error))
  if (values.length === 0) throw new TaskError('no values to aggregate')
  return values
}

function listAttribute(task: TaskRun): unknown[] {
  const list = task.json('values', { tolerateErrors: true })
  if (!Array.isArray(list)) throw new TaskError('values must be a list')
  return list
}

export function decimals(values: readonly unknown[]): Decimal[] {
  return values.map((value, index) => decimalOf(value, `values[${index}]`))
}

export const AGGREGATE_ATTRIBUTES = ['values', 'allowedFaults'] as const
export const AGGREGATE_KINDS = { allowedFaults: 'literalUint' } as const
