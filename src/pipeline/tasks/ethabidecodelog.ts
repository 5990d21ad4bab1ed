import { EventFragment, getBytes, Interface, Result, type ParamType } from 'ethers'
import { withFixedHash } from '../../chain/abi-fragment.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { hexOf } from './convert.ts'
import { abiProblem, memoizedAbi, shortReason } from './ethabiencode.ts'

/**
 * ethabidecodelog(abi, data, topics): decodes an event log into a map of its named arguments.
 * Types kept: uintN/intN -> bigint, `bytes` -> Uint8Array (cborparse reads it), bytesN -> 0x-hex,
 * address -> checksummed string. The first topic must be the event's signature hash.
 */
export const ethabidecodelog: TaskDefinition = {
  type: 'ethabidecodelog',
  attributes: ['abi', 'data', 'topics'],
  required: ['abi'],
  check(attributes) {
    return abiProblem(
      () => eventFragment(attributes.abi ?? ''),
      'an event such as "OracleRequest(bytes32 indexed specId, address requester, ...)", in Solidity types',
    )
  },
  async run(task) {
    const abi = task.raw('abi') ?? ''
    const { fragment, iface, topicHash } = memoizedAbi(eventCache, abi, (text) => {
      const parsed = withFixedHash(eventFragment(text))
      return { fragment: parsed, iface: new Interface([parsed]), topicHash: parsed.topicHash }
    })
    const data = hexOf(task.value('data', { fromInput: true }), 'data')
    const topics = task.value('topics')
    if (!Array.isArray(topics) || topics.some((topic) => typeof topic !== 'string'))
      throw new TaskError('topics must be an array of 0x-hex strings')
    if (!fragment.anonymous && topics[0]?.toLowerCase() !== topicHash) {
      throw new TaskError(
        `topics[0] ${String(topics[0])} is not the hash of ${fragment.format('sighash')} (${topicHash})`,
      )
    }
    let decoded: Result
    try {
      decoded = iface.decodeEventLog(fragment, data, topics as string[])
    } catch (error) {
      throw new TaskError(
        `cannot decode the log as ${fragment.format('sighash')}: ${(error as Error).message}`,
      )
    }
    return Object.fromEntries(
      fragment.inputs.map((input, index) => [
        input.name || String(index),
        plain(decoded[index], input),
      ]),
    )
  },
}

/** Parsed event ABIs by their text (see memoizedAbi). */
const eventCache = new Map<
  string,
  { fragment: EventFragment; iface: Interface; topicHash: string }
>()

function eventFragment(abi: string): EventFragment {
  try {
    return EventFragment.from(`event ${abi.trim()}`)
  } catch (error) {
    throw new TaskError(`abi: not an event signature (${shortReason(error)})`)
  }
}

function plain(value: unknown, type: ParamType): unknown {
  if (type.baseType === 'bytes') return getBytes(value as string)
  if (type.isArray() && Array.isArray(value))
    return value.map((item) => plain(item, type.arrayChildren))
  if (type.isTuple() && value instanceof Result) {
    return Object.fromEntries(
      type.components.map((component, index) => [
        component.name || String(index),
        plain(value[index], component),
      ]),
    )
  }
  return value
}
