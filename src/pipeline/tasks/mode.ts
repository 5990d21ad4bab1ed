import type { TaskDefinition } from '../task.ts'
import { toJsonText } from '../values.ts'
import { AGGREGATE_ATTRIBUTES, gatherValues } from './aggregate.ts'

/**
 * mode(values, allowedFaults): the most frequent value(s), as Chainlink's `{ results, occurrences }`;
 * ties give every tied value, in first-seen order. Values are compared by their JSON form.
 */
export const mode: TaskDefinition = {
  type: 'mode',
  attributes: [...AGGREGATE_ATTRIBUTES],
  jsonAttributes: ['values'],
  toleratesInputErrors: true,
  async run(task) {
    const counts = new Map<string, { value: unknown; count: number }>()
    for (const value of gatherValues(task)) {
      const key = toJsonText(value)
      const entry = counts.get(key) ?? { value, count: 0 }
      entry.count += 1
      counts.set(key, entry)
    }
    const occurrences = Math.max(...[...counts.values()].map((entry) => entry.count))
    return { results: [...counts.values()].filter((entry) => entry.count === occurrences).map((entry) => entry.value), occurrences }
  },
}
