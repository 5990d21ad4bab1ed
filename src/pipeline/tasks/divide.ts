import { Decimal } from '../../reduce/index.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { decimalOf, integerAttribute } from './convert.ts'

/**
 * divide(input, divisor, precision): exact quotient rounded half away from zero to `precision`
 * decimal places (default 16, shopspring/decimal's division precision, which Chainlink uses).
 */
export const divide: TaskDefinition = {
  type: 'divide',
  attributes: ['input', 'divisor', 'precision'],
  required: ['divisor'],
  async run(task) {
    const input = decimalOf(task.value('input', { fromInput: true }), 'input')
    const divisor = decimalOf(task.value('divisor'), 'divisor')
    if (divisor.isZero()) throw new TaskError('divisor is zero')
    const precision = integerAttribute(task.value('precision'), 'precision', 16)
    return input.dividedBy(divisor).toDecimalPlaces(precision, Decimal.ROUND_HALF_UP)
  },
}
