import { TaskError, type TaskDefinition } from '../task.ts'
import { describe, stringParam } from './convert.ts'

/** Go's base64.StdEncoding: padded standard alphabet; line breaks are skipped, anything else is an error. */
const STANDARD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** base64decode(input): the bytes of standard, padded base64 text. */
export const base64decode: TaskDefinition = {
  type: 'base64decode',
  attributes: ['input'],
  async run(task) {
    const input = stringParam(task.value('input', { fromInput: true }), 'input').replace(
      /[\r\n]/g,
      '',
    )
    if (!STANDARD_BASE64.test(input))
      throw new TaskError(`failed to decode base64 string ${describe(input)}`)
    return new Uint8Array(Buffer.from(input, 'base64'))
  },
}

/** base64encode(input): standard, padded base64 of text (its UTF-8 bytes) or of bytes. */
export const base64encode: TaskDefinition = {
  type: 'base64encode',
  attributes: ['input'],
  async run(task) {
    const input = task.value('input', { fromInput: true })
    if (input instanceof Uint8Array) return Buffer.from(input).toString('base64')
    return Buffer.from(stringParam(input, 'input'), 'utf8').toString('base64')
  },
}
