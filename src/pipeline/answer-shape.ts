import { AbiCoder, type ParamType } from 'ethers'
import { functionFragment } from './tasks/ethabiencode.ts'
import { jsonFunctionInputs } from './tasks/ethabiencode2.ts'
import type { Job, PipelineTask } from './job-spec/loader.ts'
import { replaceVariables, wholeVarExpression } from './vars.ts'

/**
 * What a job's fulfilment carries, read from the spec itself: which Operator method its ethtx calls
 * and the Solidity types of the answer the consumer's callback receives after the request id. Every
 * published shape: one word (`(bytes32 requestId, uint256 value)`), several (multi-word), `bytes` and
 * `string`, and one bytes32 word through the older `fulfillOracleRequest` (Get > Bytes32).
 */
export type FulfilMethod = 'fulfillOracleRequest2' | 'fulfillOracleRequest'

export interface AnswerShape {
  method: FulfilMethod
  /** The callback's arguments after the request id, in order. */
  types: string[]
}

export type AnswerShapeOf = { ok: true; shape: AnswerShape } | { ok: false; reason: string }

const FULFIL_METHODS: readonly string[] = ['fulfillOracleRequest2', 'fulfillOracleRequest']
/** Types that fit one 32-byte word: what `fulfillOracleRequest`'s bytes32 can carry. */
const ONE_WORD = /^(u?int\d*|bool|address|bytes([1-9]|[12]\d|3[0-2]))$/

export function answerShapeOf(job: Job): AnswerShapeOf {
  const byId = new Map(job.tasks.map((task) => [task.id, task]))
  const ethtx = job.tasks.filter((task) => task.type === 'ethtx').at(-1)
  if (!ethtx) return { ok: false, reason: 'it has no ethtx task: it fulfils nothing on chain' }
  const encodeTx = sourceOf(ethtx, 'data', byId)
  const call = encodeTx && encodedCall(encodeTx)
  if (!call || !FULFIL_METHODS.includes(call.name))
    return {
      ok: false,
      reason: `its ethtx ${ethtx.id} does not send an ethabiencode of the Operator's fulfillOracleRequest2 or fulfillOracleRequest`,
    }
  const method = call.name as FulfilMethod
  const answerTask = argumentSource(encodeTx, 'data', byId)
  const answer = answerTask && encodedCall(answerTask)
  if (!answer)
    return {
      ok: false,
      reason: `the data of ${encodeTx.id}'s ${method} is not the output of an ethabiencode task, so its answer's types are unknown`,
    }
  const types = answer.inputs.map((input) => input.format('sighash'))
  if (method === 'fulfillOracleRequest') {
    if (types.length !== 1 || !ONE_WORD.test(types[0]!))
      return {
        ok: false,
        reason: `fulfillOracleRequest carries one bytes32 word, and ${answerTask.id} encodes (${types.join(', ')})`,
      }
    return { ok: true, shape: { method, types } }
  }
  if (types[0] !== 'bytes32')
    return {
      ok: false,
      reason: `${answerTask.id} encodes (${types.join(', ')}): the Operator needs a fulfilment's data to start with the request id (bytes32)`,
    }
  if (types.length === 1)
    return { ok: false, reason: `${answerTask.id} encodes the request id alone: no answer` }
  return { ok: true, shape: { method, types: types.slice(1) } }
}

/** FeedConsumer's answer types (its ValueType enum, in order): one of its typed callbacks, or Raw. */
export const CONSUMER_VALUE_TYPES = [
  'uint256',
  'int256',
  'bool',
  'string',
  'bytes32',
  'bytes',
  'raw',
] as const
export type ConsumerValueType = (typeof CONSUMER_VALUE_TYPES)[number]

/** The FeedConsumer callback an answer of this shape takes: a typed one for one value, else Raw. */
export function consumerValueType(shape: AnswerShape): ConsumerValueType {
  const [only, ...more] = shape.types
  const typed = CONSUMER_VALUE_TYPES.find((type) => type === only && type !== 'raw')
  if (more.length > 0 || !typed) return 'raw'
  // fulfillOracleRequest passes one bytes32 word: the typed callbacks of one-word types read it.
  if (shape.method === 'fulfillOracleRequest' && (typed === 'string' || typed === 'bytes'))
    return 'raw'
  return typed
}

/** The answer's types as one label: `uint256`, or `(uint256, uint256, uint256)`. */
export function answerLabel(shape: AnswerShape): string {
  return shape.types.length === 1 ? shape.types[0]! : `(${shape.types.join(', ')})`
}

/**
 * The answer inside a fulfilment's data (fulfillOracleRequest2's bytes, the request id first, or
 * fulfillOracleRequest's bytes32 word): one value, or a list for several.
 */
export function decodeAnswer(shape: AnswerShape, data: string): unknown {
  const coder = AbiCoder.defaultAbiCoder()
  const values =
    shape.method === 'fulfillOracleRequest'
      ? coder.decode(shape.types, data)
      : coder.decode(['bytes32', ...shape.types], data).slice(1)
  return shape.types.length === 1 ? values[0] : [...values]
}

/**
 * The answer a consumer's callback received, from its arguments as they came (the request id
 * first, as FeedConsumer's Raw callback stores them), for either Operator method.
 */
export function decodeCallbackAnswer(shape: AnswerShape, args: string): unknown {
  const values = AbiCoder.defaultAbiCoder()
    .decode(['bytes32', ...shape.types], args)
    .slice(1)
  return shape.types.length === 1 ? values[0] : [...values]
}

/** The task an attribute reads whole (`$(task)`), or the first input when it is not given. */
function sourceOf(
  task: PipelineTask,
  attribute: string,
  byId: ReadonlyMap<string, PipelineTask>,
): PipelineTask | undefined {
  const text = task.attributes[attribute]
  if (text === undefined || text.trim() === '') return byId.get(task.inputs[0] ?? '')
  return byId.get(wholeVarExpression(text) ?? '')
}

/** The task whose output an ethabiencode's JSON `data` gives argument `name`: `"name": $(task)`. */
function argumentSource(
  encode: PipelineTask,
  name: string,
  byId: ReadonlyMap<string, PipelineTask>,
): PipelineTask | undefined {
  const marked = replaceVariables(encode.attributes.data ?? '', (keypath) =>
    JSON.stringify(`$(${keypath})`),
  )
  try {
    const data = JSON.parse(marked) as Record<string, unknown>
    const value = data[name]
    return typeof value === 'string' ? byId.get(wholeVarExpression(value) ?? '') : undefined
  } catch {
    return undefined
  }
}

/** An ethabiencode(2) task's function name ('' for an argument list) and arguments. */
function encodedCall(
  task: PipelineTask,
): { name: string; inputs: readonly ParamType[] } | undefined {
  const abi = task.attributes.abi ?? ''
  try {
    if (task.type === 'ethabiencode') {
      const fragment = functionFragment(abi)
      return { name: fragment.name === 'anonymous__' ? '' : fragment.name, inputs: fragment.inputs }
    }
    if (task.type === 'ethabiencode2') return jsonFunctionInputs(abi)
  } catch {
    return undefined
  }
  return undefined
}
