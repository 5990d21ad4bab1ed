import { hexlify, toUtf8Bytes } from 'ethers'
import { TaskError, type TaskDefinition } from '../task.ts'
import { isDecimal } from '../values.ts'
import { describe } from './convert.ts'

/**
 * hexencode(input): 0x-hex of a string's UTF-8 bytes, of bytes, or of a non-negative integer's value
 * (bigint, integral number or Decimal: 255 -> 0xff). Negative or fractional numbers are errors.
 */
export const hexencode: TaskDefinition = {
  type: 'hexencode',
  attributes: ['input'],
  async run(task) {
    const input = task.value('input', { fromInput: true })
    if (typeof input === 'string') return hexlify(toUtf8Bytes(input))
    if (input instanceof Uint8Array) return hexlify(input)
    const integer = toInteger(input)
    if (integer === undefined)
      throw new TaskError(`input cannot be hex-encoded: ${describe(input)}`)
    if (integer < 0n) throw new TaskError(`input is negative: ${integer}`)
    return '0x' + integer.toString(16)
  },
}

function toInteger(value: unknown): bigint | undefined {
  if (typeof value === 'bigint') return value
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value)
  if (isDecimal(value) && value.isInteger()) return BigInt(value.toFixed(0))
  return undefined
}
