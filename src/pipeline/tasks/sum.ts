import { Decimal } from '../../reduce/index.ts'
import type { TaskDefinition } from '../task.ts'
import { AGGREGATE_ATTRIBUTES, AGGREGATE_KINDS, decimals, gatherValues } from './aggregate.ts'

/** sum(values, allowedFaults): exact decimal sum. */
export const sum: TaskDefinition = {
  type: 'sum',
  attributes: [...AGGREGATE_ATTRIBUTES],
  jsonAttributes: ['values'],
  kinds: AGGREGATE_KINDS,
  toleratesInputErrors: true,
  async run(task) {
    return decimals(gatherValues(task)).reduce((total, value) => total.plus(value), new Decimal(0))
  },
}
