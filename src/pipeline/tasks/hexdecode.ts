import { TaskError, type TaskDefinition } from '../task.ts'
import { wholeVarExpression } from '../vars.ts'
import { describe, stringParam } from './convert.ts'

// Chainlink's HasPrefix takes 0x or 0X; the digits after it must be whole bytes (hex.DecodeString).
const HEX_PREFIX = /^0[xX]/
const WHOLE_BYTES = /^(?:[0-9a-fA-F]{2})*$/

/**
 * hexdecode(input): the bytes of 0x-prefixed hex text (0x alone is no bytes). A literal input is
 * checked at load time by the run's own rules, so that 0X is taken and text before the prefix refused
 * (the shared `hex` kind wants a lower-case 0x, as the tasks reading calldata do).
 */
export const hexdecode: TaskDefinition = {
  type: 'hexdecode',
  attributes: ['input'],
  check(attributes) {
    const text = attributes.input
    if (text === undefined || text.trim() === '' || wholeVarExpression(text) !== undefined)
      return []
    if (HEX_PREFIX.test(text) && WHOLE_BYTES.test(text.slice(2))) return []
    return [{ attribute: 'input', message: `must be 0x-hex of whole bytes, got ${describe(text)}` }]
  },
  async run(task) {
    const input = stringParam(task.value('input', { fromInput: true }), 'input')
    if (!HEX_PREFIX.test(input)) throw new TaskError('hex string must have prefix 0x')
    const digits = input.slice(2)
    if (!WHOLE_BYTES.test(digits))
      throw new TaskError(`failed to decode hex string ${describe(input)}`)
    return new Uint8Array(Buffer.from(digits, 'hex'))
  },
}
