import { TaskError, type TaskDefinition } from '../task.ts'
import { isDecimal } from '../values.ts'
import { describe } from './convert.ts'

/**
 * hexencode(input): 0x-hex of a string's UTF-8 bytes (never read as a number or as hex), of bytes
 * (whole bytes), or of a non-negative whole number's value (255 -> 0xff). Empty text or bytes give ''.
 * Negative or fractional numbers are errors, as on a Chainlink node.
 */
export const hexencode: TaskDefinition = {
  type: 'hexencode',
  attributes: ['input'],
  async run(task) {
    const input = task.value('input', { fromInput: true })
    if (typeof input === 'string' || input instanceof Uint8Array) {
      const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input)
      return bytes.length === 0 ? '' : `0x${bytes.toString('hex')}`
    }
    const integer = toInteger(input)
    if (integer < 0n)
      throw new TaskError(`input: negative integer ${integer} cannot be hex-encoded`)
    return '0x' + integer.toString(16)
  },
}

function toInteger(value: unknown): bigint {
  if (typeof value === 'bigint') return value
  const decimal =
    typeof value === 'number' && Number.isFinite(value)
      ? value
      : isDecimal(value)
        ? value
        : undefined
  if (decimal === undefined) throw new TaskError(`input cannot be hex-encoded: ${describe(value)}`)
  const isInteger = typeof decimal === 'number' ? Number.isInteger(decimal) : decimal.isInteger()
  if (!isInteger)
    throw new TaskError(
      `input: decimal input ${describe(value)} cannot be hex-encoded, only whole numbers`,
    )
  return BigInt(typeof decimal === 'number' ? decimal : decimal.toFixed(0))
}
