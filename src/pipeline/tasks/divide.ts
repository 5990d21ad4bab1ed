import { Decimal } from '../../reduce/index.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { decimalOf, int32Attribute } from './convert.ts'

/**
 * divide(input, divisor, precision): the exact quotient rounded half away from zero to `precision`
 * decimal places, as shopspring/decimal's DivRound does for Chainlink; a negative precision rounds to
 * tens, hundreds... Without precision, 16 places (shopspring's DivisionPrecision).
 */
const DEFAULT_PRECISION = 16

export const divide: TaskDefinition = {
  type: 'divide',
  attributes: ['input', 'divisor', 'precision'],
  required: ['divisor'],
  kinds: { input: 'decimal', divisor: 'nonzeroDecimal', precision: 'int32' },
  async run(task) {
    const input = decimalOf(task.value('input', { fromInput: true }), 'input')
    const divisor = decimalOf(task.value('divisor'), 'divisor')
    if (divisor.isZero()) throw new TaskError('divisor: divide by zero')
    const precision = int32Attribute(task.value('precision'), 'precision') ?? DEFAULT_PRECISION
    return roundHalfAwayFromZero(input.dividedBy(divisor), precision)
  },
}

/** `value` rounded half away from zero to `places` decimal places (negative: left of the point). */
export function roundHalfAwayFromZero(value: Decimal, places: number): Decimal {
  // More places than the value has change nothing, and decimal.js refuses over 1e9 (int32 allows more).
  if (places >= value.decimalPlaces()) return value
  if (places >= 0) return value.toDecimalPlaces(places, Decimal.ROUND_HALF_UP)
  const unit = new Decimal(10).pow(-places)
  return value.dividedBy(unit).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).times(unit)
}
