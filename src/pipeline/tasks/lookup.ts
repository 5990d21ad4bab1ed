import { TaskError, type TaskDefinition } from '../task.ts'
import { isPlainObject } from '../values.ts'
import { describe } from './convert.ts'

/** lookup(key): the value under `key` (as written) of the one input, a map; null when it has none. */
export const lookup: TaskDefinition = {
  type: 'lookup',
  attributes: ['key'],
  async run(task) {
    if (task.inputs.length !== 1)
      throw new TaskError(`task inputs: lookup takes exactly one input, got ${task.inputs.length}`)
    const [map] = task.inputValues()
    if (!isPlainObject(map)) throw new TaskError(`unexpected input type: ${describe(map)}`)
    const key = task.raw('key') ?? ''
    return Object.hasOwn(map, key) ? map[key] : null
  },
}
