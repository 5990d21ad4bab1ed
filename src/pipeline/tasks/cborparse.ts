import { Decoder } from 'cbor-x/decode'
import { CborShapeError, walkCborItem } from '../cbor-items.ts'
import { DecodeBudgetError, NodeBudget } from '../../net/decode-budget.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../limits.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { bytesParam } from './convert.ts'

/**
 * cborparse(data, mode): Chainlink's request parameters. `diet` (default): the on-chain buffer is a
 * map body without its header, so it is decoded as 0xbf + data + 0xff (an indefinite-length map);
 * `standard`: one complete CBOR item. Integers above 2^53 come back as bigint, byte strings as bytes.
 * Bounded by what it builds, not only by what it reads: the items are walked and counted against
 * DECODE_MAX_NODES before cbor-x decodes them, and tags other than big numbers are refused
 * (src/pipeline/cbor-items.ts: shared references expand a few hundred bytes into millions of values).
 */
// The decoder is cbor-x's `decode` entry: its main one, in node, loads a native string extractor
// too, about 3 MB of each isolate, for speed no 64 KiB input needs.
const MAX_CBOR_BYTES = 64 * 1024
const MAX_DEPTH = 32
// Maps come back as Map and become objects through Object.fromEntries, which keeps a parameter named
// __proto__ as an own key: cbor-x's own object mode renames it to __proto_.
const decoder = new Decoder({ mapsAsObjects: false, useRecords: false })

export const cborparse: TaskDefinition = {
  type: 'cborparse',
  attributes: ['data', 'mode'],
  check(attributes) {
    const mode = attributes.mode?.trim()
    if (
      mode === undefined ||
      mode === '' ||
      mode === 'diet' ||
      mode === 'standard' ||
      mode.startsWith('$(')
    )
      return []
    return [{ attribute: 'mode', message: `must be diet or standard, got ${JSON.stringify(mode)}` }]
  },
  async run(task) {
    const mode = task.value('mode') ?? 'diet'
    if (mode !== 'diet' && mode !== 'standard')
      throw new TaskError(`mode must be diet or standard, got ${JSON.stringify(mode)}`)
    const data = bytesParam(task.value('data', { fromInput: true }), 'data')
    if (data.length > MAX_CBOR_BYTES)
      throw new TaskError(`data is ${data.length} bytes, more than ${MAX_CBOR_BYTES}`)
    // No data: an empty map in diet mode (a request without parameters), nothing in standard mode.
    if (data.length === 0) return mode === 'diet' ? {} : null
    // As Chainlink's ParseDietCBOR: a buffer that is a whole map already (major type 5) is not wrapped.
    const buffer =
      mode === 'diet' && data[0]! >> 5 !== 5
        ? Buffer.concat([Buffer.from([0xbf]), data, Buffer.from([0xff])])
        : Buffer.from(data)
    const maxNodes = (task.context.limits ?? DEFAULT_PIPELINE_LIMITS).decodeMaxNodes
    checkItems(buffer, mode, maxNodes)
    let decoded: unknown
    try {
      // Diet: the request's map, and padding after it is not read (Chainlink's "trailing empty
      // bytes" case). Standard: exactly one item.
      if (mode === 'diet')
        decoder.decodeMultiple(buffer, (item: unknown) => {
          decoded = item
          return false
        })
      else decoded = decoder.decode(buffer)
    } catch (error) {
      throw new TaskError(`data is not valid CBOR (${mode}): ${(error as Error).message}`)
    }
    return normalise(decoded, 0)
  },
}

/** The walk of cbor-items.ts, its refusals as the task's errors. */
function checkItems(buffer: Buffer, mode: 'diet' | 'standard', maxNodes: number): void {
  try {
    walkCborItem(buffer, {
      budget: new NodeBudget(maxNodes, `data (CBOR, ${mode})`),
      maxDepth: MAX_DEPTH,
      positionOffset: mode === 'diet' ? -1 : 0,
    })
  } catch (error) {
    // The walk's words, completed: a run's reason shows its root cause first, and this is it.
    if (error instanceof CborShapeError && error.problem === 'malformed')
      throw new TaskError(`data is not valid CBOR (${mode}): ${error.message}`)
    if (error instanceof CborShapeError) throw new TaskError(`data ${error.message}`)
    if (error instanceof DecodeBudgetError) throw new TaskError(error.message, { cause: error })
    throw error
  }
}

/** Maps become objects with text keys; depth is bounded against hostile input. */
function normalise(value: unknown, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new TaskError(`data nests deeper than ${MAX_DEPTH} levels`)
  if (value instanceof Map)
    return Object.fromEntries(
      [...value.entries()].map(([key, item]) => [String(key), normalise(item, depth + 1)]),
    )
  if (value instanceof Uint8Array) return new Uint8Array(value)
  if (Array.isArray(value)) return value.map((item) => normalise(item, depth + 1))
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, normalise(item, depth + 1)]),
    )
  return value
}
