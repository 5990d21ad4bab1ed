import { AbiCoder, FunctionFragment, type JsonFragment } from 'ethers/abi'
import { TaskError, type TaskDefinition } from '../task.ts'
import { isPlainObject } from '../values.ts'
import { abiProblem, convert, memoizedAbi, shortReason } from './ethabiencode.ts'

/**
 * ethabiencode2(abi, data): as ethabiencode, with `abi` given as a JSON ABI entry,
 * `{"name": "fn", "inputs": [{"name": "a", "type": "tuple", "components": [...]}, ...]}`: tuples and
 * arrays of them as well. With a name the output starts with the selector; without, the arguments alone.
 */
export const ethabiencode2: TaskDefinition = {
  type: 'ethabiencode2',
  attributes: ['abi', 'data'],
  required: ['abi'],
  jsonAttributes: ['data'],
  check(attributes) {
    return abiProblem(
      () => jsonFunction(attributes.abi ?? ''),
      'a JSON ABI entry such as {"name": "fulfill", "inputs": [{"name": "value", "type": "uint256"}]}, every input named',
    )
  },
  async run(task) {
    const fragment = memoizedAbi(jsonCache, task.raw('abi') ?? '', jsonFunction)
    const data = task.json('data') ?? {}
    if (!isPlainObject(data))
      throw new TaskError('data must be a JSON object of argument values by name')
    const values = fragment.inputs.map((input) => {
      if (!Object.hasOwn(data, input.name))
        throw new TaskError(`data: argument '${input.name}' is missing`)
      return convert(data[input.name], input, `data.${input.name}`)
    })
    try {
      return fragment.prefix + AbiCoder.defaultAbiCoder().encode(fragment.inputs, values).slice(2)
    } catch (error) {
      throw new TaskError(`could not ABI encode values: ${shortReason(error)}`)
    }
  },
}

interface JsonFunction {
  /** '' for an entry without a name (arguments only). */
  name: string
  inputs: FunctionFragment['inputs']
  /** 0x and the selector when the entry has a name, 0x alone when it has none. */
  prefix: string
}
const jsonCache = new Map<string, JsonFunction>()

/** The name and arguments of a JSON ABI entry (answer-shape.ts reads a job's encodings with it). */
export function jsonFunctionInputs(abi: string): Pick<JsonFunction, 'name' | 'inputs'> {
  return memoizedAbi(jsonCache, abi, jsonFunction)
}

function jsonFunction(abi: string): JsonFunction {
  let entry: unknown
  try {
    entry = JSON.parse(abi)
  } catch (error) {
    throw new TaskError(`abi: not JSON (${(error as Error).message})`)
  }
  if (!isPlainObject(entry)) throw new TaskError('abi: not a JSON object')
  const { name = '', inputs = [] } = entry as JsonFragment
  let fragment: FunctionFragment
  try {
    fragment = FunctionFragment.from({ type: 'function', name: name || 'anonymous__', inputs })
  } catch (error) {
    throw new TaskError(`abi: ${shortReason(error)}`)
  }
  const unnamed = fragment.inputs.findIndex((input) => input.name === '')
  if (unnamed !== -1)
    throw new TaskError(`abi: bad ABI specification, missing argument name (input ${unnamed + 1})`)
  return { name, inputs: fragment.inputs, prefix: name ? fragment.selector : '0x' }
}
