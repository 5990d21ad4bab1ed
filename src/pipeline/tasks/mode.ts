import type { TaskDefinition } from '../task.ts'
import { isDecimal, toJsonText } from '../values.ts'
import { AGGREGATE_ATTRIBUTES, AGGREGATE_KINDS, gatherValues } from './aggregate.ts'

/**
 * mode(values, allowedFaults): the most frequent value(s), as Chainlink's `{ results, occurrences }`.
 * Values compare by their text form, as a node compares them (`2` and `"2"` are the same value);
 * ties are listed in the order in which each reached the top count, which is the node's order.
 */
export const mode: TaskDefinition = {
  type: 'mode',
  attributes: [...AGGREGATE_ATTRIBUTES],
  jsonAttributes: ['values'],
  kinds: AGGREGATE_KINDS,
  toleratesInputErrors: true,
  async run(task) {
    const counts = new Map<string, number>()
    let occurrences = 0
    let results: unknown[] = []
    for (const value of gatherValues(task)) {
      const key = comparable(value)
      const count = (counts.get(key) ?? 0) + 1
      counts.set(key, count)
      if (count > occurrences) {
        occurrences = count
        results = [value]
      } else if (count === occurrences) {
        results.push(value)
      }
    }
    return { results, occurrences }
  },
}

function comparable(value: unknown): string {
  if (
    typeof value === 'string' ||
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    typeof value === 'bigint'
  )
    return String(value)
  if (isDecimal(value)) return value.toFixed()
  if (value instanceof Uint8Array) return new TextDecoder().decode(value)
  return toJsonText(value)
}
