import { Decimal } from '../../reduce/index.ts'
import type { TaskDefinition } from '../task.ts'
import { AGGREGATE_ATTRIBUTES, decimals, gatherValues } from './aggregate.ts'
import { integerAttribute } from './convert.ts'

/** mean(values, allowedFaults, precision): the average, rounded half away from zero to `precision` places if given. */
export const mean: TaskDefinition = {
  type: 'mean',
  attributes: [...AGGREGATE_ATTRIBUTES, 'precision'],
  jsonAttributes: ['values'],
  toleratesInputErrors: true,
  async run(task) {
    const values = decimals(gatherValues(task))
    const average = values
      .reduce((total, value) => total.plus(value), new Decimal(0))
      .dividedBy(values.length)
    const precision = task.value('precision')
    return precision === undefined
      ? average
      : average.toDecimalPlaces(integerAttribute(precision, 'precision', 0), Decimal.ROUND_HALF_UP)
  },
}
