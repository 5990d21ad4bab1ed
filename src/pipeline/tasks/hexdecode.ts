import { TaskError, type TaskDefinition } from '../task.ts'
import { describe, stringParam } from './convert.ts'

/** hexdecode(input): the bytes of 0x-prefixed hex text (0x alone is no bytes). */
export const hexdecode: TaskDefinition = {
  type: 'hexdecode',
  attributes: ['input'],
  kinds: { input: 'hex' },
  async run(task) {
    const input = stringParam(task.value('input', { fromInput: true }), 'input')
    if (!/^0[xX]/.test(input)) throw new TaskError('hex string must have prefix 0x')
    const digits = input.slice(2)
    if (!/^(?:[0-9a-fA-F]{2})*$/.test(digits))
      throw new TaskError(`failed to decode hex string ${describe(input)}`)
    return new Uint8Array(Buffer.from(digits, 'hex'))
  },
}
