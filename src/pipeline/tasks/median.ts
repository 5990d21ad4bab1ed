import type { TaskDefinition } from '../task.ts'
import { AGGREGATE_ATTRIBUTES, AGGREGATE_KINDS, decimals, gatherValues } from './aggregate.ts'

/** median(values, allowedFaults): the middle value; with an even count, the mean of the two middle ones. */
export const median: TaskDefinition = {
  type: 'median',
  attributes: [...AGGREGATE_ATTRIBUTES],
  jsonAttributes: ['values'],
  kinds: AGGREGATE_KINDS,
  toleratesInputErrors: true,
  async run(task) {
    const sorted = decimals(gatherValues(task)).sort((a, b) => a.comparedTo(b))
    const middle = Math.floor(sorted.length / 2)
    const upper = sorted[middle]!
    return sorted.length % 2 === 1 ? upper : sorted[middle - 1]!.plus(upper).dividedBy(2)
  },
}
