import { AbiCoder, FunctionFragment, type ParamType } from 'ethers/abi'
import { TaskError, type TaskDefinition } from '../task.ts'
import { bytesParam } from './convert.ts'
import { plain } from './ethabidecodelog.ts'
import { abiProblem, memoizedAbi, requireNames, shortReason } from './ethabiencode.ts'

/**
 * ethabidecode(abi, data): ABI-encoded `data` (a variable, else the first input) decoded by the
 * argument list `abi` (`uint256 price, address[] oracles`, every argument named) into a map by name.
 * No data decodes to an empty map. Values: integers as bigint, `bytes` as bytes, bytesN as 0x-hex,
 * addresses checksummed.
 */
export const ethabidecode: TaskDefinition = {
  type: 'ethabidecode',
  attributes: ['abi', 'data'],
  required: ['abi'],
  kinds: { data: 'variable' },
  check(attributes) {
    return abiProblem(
      () => argumentTypes(attributes.abi ?? ''),
      'an argument list such as "uint256 price, bytes32 id", each argument named, in Solidity types',
    )
  },
  async run(task) {
    const types = memoizedAbi(argumentCache, task.raw('abi') ?? '', argumentTypes)
    const data = bytesParam(task.value('data', { fromInput: true }), 'data')
    if (data.length === 0) return {}
    let values: readonly unknown[]
    try {
      values = AbiCoder.defaultAbiCoder().decode(types, data)
    } catch (error) {
      throw new TaskError(
        `data cannot be decoded as (${types.map((type) => type.format()).join(', ')}): ${shortReason(error)}`,
      )
    }
    return Object.fromEntries(types.map((type, index) => [type.name, plain(values[index], type)]))
  },
}

const argumentCache = new Map<string, readonly ParamType[]>()

/** The argument list's types; every argument must have a name (Chainlink's rule). Data locations are dropped. */
export function argumentTypes(abi: string): readonly ParamType[] {
  // A data location is a word of its own: `a$memory$b` is a name (`$` is no word boundary there).
  const list = abi.replace(/(^|[\s,(])(?:memory|calldata|storage)(?=[\s,)]|$)/g, '$1 ').trim()
  let fragment: FunctionFragment
  try {
    fragment = FunctionFragment.from(`function anonymous__(${list.replace(/^\(|\)$/g, '')})`)
  } catch (error) {
    throw new TaskError(`abi: not an argument list (${shortReason(error)})`)
  }
  requireNames(fragment.inputs)
  return fragment.inputs
}
