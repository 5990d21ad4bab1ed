import { Decimal } from '../../reduce/index.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { bytesParam, describe } from './convert.ts'

/**
 * length(input): the number of elements of a list (or of text holding a JSON list), else the number
 * of bytes: of bytes, of 0x-hex decoded, or of text in UTF-8 (not its characters).
 */
export const length: TaskDefinition = {
  type: 'length',
  attributes: ['input'],
  async run(task) {
    const input = task.value('input', { fromInput: true })
    if (Array.isArray(input)) return new Decimal(input.length)
    const list = typeof input === 'string' ? jsonList(input) : undefined
    if (list) return new Decimal(list.length)
    if (typeof input !== 'string' && !(input instanceof Uint8Array) && input !== null)
      throw new TaskError(`input: expected a list, text or bytes, got ${describe(input)}`)
    return new Decimal(bytesParam(input, 'input').length)
  },
}

function jsonList(text: string): unknown[] | undefined {
  if (!text.trimStart().startsWith('[')) return undefined
  try {
    const parsed = JSON.parse(text) as unknown
    return Array.isArray(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}
