import { parseJsonLossless } from '../json.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { isPlainObject } from '../values.ts'
import { describe } from './convert.ts'

/**
 * merge(left, right): the map `left` with every key of `right` written over it (a null on the right
 * clobbers too). Each side is a map variable or a JSON object written in the spec; `left` defaults to
 * the first input. As in Chainlink, the written JSON holds no `$(...)`: use a whole variable instead.
 */
export const merge: TaskDefinition = {
  type: 'merge',
  attributes: ['left', 'right'],
  required: ['right'],
  check(attributes) {
    return (['left', 'right'] as const).flatMap((name) => {
      const text = attributes[name]
      if (text === undefined || text.trim() === '' || /^\s*\$\([^$]*\)\s*$/.test(text)) return []
      try {
        if (isPlainObject(JSON.parse(text))) return []
      } catch {
        // Reported below.
      }
      return [
        {
          attribute: name,
          message: `must be a JSON object or a $(variable), got ${text.slice(0, 60)}`,
        },
      ]
    })
  },
  async run(task) {
    if (task.inputs.length > 1)
      throw new TaskError(`task inputs: merge takes at most one input, got ${task.inputs.length}`)
    const left = mapParam(task.value('left', { fromInput: true }), 'left-side')
    const right = mapParam(task.value('right'), 'right-side')
    const merged: Record<string, unknown> = { ...left }
    for (const [key, value] of Object.entries(right ?? {}))
      Object.defineProperty(merged, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      })
    return merged
  },
}

/** Chainlink's MapParam: a map, or JSON text of one; null is no map. */
export function mapParam(value: unknown, name: string): Record<string, unknown> | undefined {
  if (value === null || value === undefined) return undefined
  if (isPlainObject(value)) return value
  if (typeof value === 'string' || value instanceof Uint8Array) {
    const text = typeof value === 'string' ? value : Buffer.from(value).toString('utf8')
    let parsed: unknown
    try {
      parsed = parseJsonLossless(text)
    } catch (error) {
      throw new TaskError(`${name}: not JSON: ${(error as Error).message}`)
    }
    if (isPlainObject(parsed)) return parsed
    throw new TaskError(`${name}: expected a map, got JSON ${describe(parsed)}`)
  }
  throw new TaskError(`${name}: expected a map, got ${describe(value)}`)
}
