import { Decimal } from '../../reduce/index.ts'
import type { TaskDefinition } from '../task.ts'
import { AGGREGATE_ATTRIBUTES, AGGREGATE_KINDS, decimals, gatherValues } from './aggregate.ts'
import { int32Attribute } from './convert.ts'
import { roundHalfAwayFromZero } from './divide.ts'

/**
 * mean(values, allowedFaults, precision): the average, rounded half away from zero to `precision`
 * places (16 when not given, as Chainlink's division).
 */
export const mean: TaskDefinition = {
  type: 'mean',
  attributes: [...AGGREGATE_ATTRIBUTES, 'precision'],
  jsonAttributes: ['values'],
  kinds: { ...AGGREGATE_KINDS, precision: 'int32' },
  toleratesInputErrors: true,
  async run(task) {
    const values = decimals(gatherValues(task))
    const average = values
      .reduce((total, value) => total.plus(value), new Decimal(0))
      .dividedBy(values.length)
    return roundHalfAwayFromZero(
      average,
      int32Attribute(task.value('precision'), 'precision') ?? 16,
    )
  },
}
