import { EventFragment, Interface, Result, type ParamType } from 'ethers/abi'
import { getBytes } from 'ethers/utils'
import { withFixedHash } from '../../chain/abi-fragment.ts'
import { isOracleRequestFragment } from '../../chain/operator.ts'
import { readCanonicalOracleRequest } from '../../chain/oracle-request-data.ts'
import { DecodeBudgetError, NodeBudget } from '../../net/decode-budget.ts'
import { countAbiValues } from '../abi-values.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../limits.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { hexOf } from './convert.ts'
import { abiProblem, memoizedAbi, requireNames, shortReason } from './ethabiencode.ts'

/**
 * ethabidecodelog(abi, data, topics): decodes an event log into a map of its named arguments.
 * Types kept: uintN/intN -> bigint, `bytes` -> Uint8Array (cborparse reads it), bytesN -> 0x-hex,
 * address -> checksummed string. The first topic must be the event's signature hash.
 * What ethers would build is counted against DECODE_MAX_NODES before it decodes (abi-values.ts).
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
    const { fragment, iface, topicHash, oracleRequestLayout } = memoizedAbi(
      eventCache,
      abi,
      (text) => {
        const parsed = withFixedHash(eventFragment(text))
        return {
          fragment: parsed,
          iface: new Interface([parsed]),
          topicHash: parsed.topicHash,
          oracleRequestLayout: isOracleRequestFragment(parsed),
        }
      },
    )
    const data = hexOf(task.value('data', { fromInput: true }), 'data')
    const topics = task.value('topics')
    if (!Array.isArray(topics) || topics.some((topic) => typeof topic !== 'string'))
      throw new TaskError('topics must be an array of 0x-hex strings')
    if (!fragment.anonymous && topics[0]?.toLowerCase() !== topicHash) {
      throw new TaskError(
        `topics[0] ${String(topics[0])} is not the hash of ${fragment.format('sighash')} (${topicHash})`,
      )
    }
    const maxNodes = (task.context.limits ?? DEFAULT_PIPELINE_LIMITS).decodeMaxNodes
    const values =
      (oracleRequestLayout && readOracleRequest(data, topics as string[])) ||
      decodedByEthers(iface, fragment, { data, topics: topics as string[], maxNodes })
    return Object.fromEntries(
      fragment.inputs.map((input, index) => [input.name, plain(values[index], input)]),
    )
  },
}

function decodedByEthers(
  iface: Interface,
  fragment: EventFragment,
  log: { data: string; topics: string[]; maxNodes: number },
): Result {
  const { data, topics, maxNodes } = log
  try {
    const unindexed = fragment.inputs.filter((input) => !input.indexed)
    countAbiValues(unindexed, getBytes(data), new NodeBudget(maxNodes, 'data (ABI)'))
  } catch (error) {
    if (!(error instanceof DecodeBudgetError)) throw error
    throw new TaskError(
      `cannot decode the log as ${fragment.format('sighash')}: ${error.message}`,
      {
        cause: error,
      },
    )
  }
  try {
    return iface.decodeEventLog(fragment, data, topics)
  } catch (error) {
    throw new TaskError(
      `cannot decode the log as ${fragment.format('sighash')}: ${(error as Error).message}`,
    )
  }
}

/**
 * The values of an Operator's OracleRequest log in the event's order, read by slicing (the listener's
 * reader, src/chain/oracle-request-data.ts) when the log has the layout abi.encode gives it; undefined
 * otherwise, and ethers decodes it. Every directrequest spec starts with this decode.
 */
function readOracleRequest(data: string, topics: string[]): unknown[] | undefined {
  const fields = readCanonicalOracleRequest(data, topics)
  if (!fields) return undefined
  return [
    fields.specId,
    fields.requester,
    fields.requestId,
    fields.payment,
    fields.callbackAddr,
    fields.callbackFunctionId,
    fields.cancelExpiration,
    fields.dataVersion,
    fields.data,
  ]
}

/** Parsed event ABIs by their text (see memoizedAbi). */
const eventCache = new Map<
  string,
  { fragment: EventFragment; iface: Interface; topicHash: string; oracleRequestLayout: boolean }
>()

function eventFragment(abi: string): EventFragment {
  let fragment: EventFragment
  try {
    fragment = EventFragment.from(`event ${abi.trim()}`)
  } catch (error) {
    throw new TaskError(`abi: not an event signature (${shortReason(error)})`)
  }
  requireNames(fragment.inputs)
  return fragment
}

/** A decoded value as the pipeline keeps it: `bytes` as bytes, tuples as maps, the rest as ethers gives it. */
export function plain(value: unknown, type: ParamType): unknown {
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
