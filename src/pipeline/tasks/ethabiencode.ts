import { AbiCoder, FunctionFragment, Interface, type ParamType } from 'ethers/abi'
import { toUtf8Bytes } from 'ethers/utils'
import { toBigInt } from '../../reduce/index.ts'
import { withFixedHash } from '../../chain/abi-fragment.ts'
import { TaskError, type TaskDefinition } from '../task.ts'
import { isDecimal, isPlainObject } from '../values.ts'
import { replaceVariables } from '../vars.ts'
import { bytesOf, decimalOf, describe, hexOf } from './convert.ts'
import { encodeWords, wordKinds, type WordKind } from './abi-words.ts'

/**
 * ethabiencode(abi, data). `abi` is `name(type arg, ...)` (the output starts with the 4-byte selector)
 * or `(type arg, ...)` (arguments only). `data` is a JSON object by argument name with typed values.
 * Integers: numbers, decimal strings, Decimals and bigints, truncated toward zero as Chainlink's
 * ethabiencode does (2.9 -> 2, -2.9 -> -2); out of range for the type is an error.
 * Output: 0x-hex calldata.
 */
export const ethabiencode: TaskDefinition = {
  type: 'ethabiencode',
  attributes: ['abi', 'data'],
  required: ['abi'],
  jsonAttributes: ['data'],
  check(attributes) {
    const problems = abiProblem(
      () => functionFragment(attributes.abi ?? ''),
      'a function such as "fulfill(bytes32 requestId, uint256 value)" or an argument list such as "(bytes32 requestId, uint256 value)", in Solidity types',
    )
    if (problems.length > 0) return problems
    const missing = missingArguments(functionFragment(attributes.abi ?? ''), attributes.data)
    return missing.length === 0
      ? []
      : [{ attribute: 'data', message: `has no value for argument ${missing.join(', ')}` }]
  },
  async run(task) {
    const { fragment, iface, words, prefix } = parsedFunction(task.raw('abi') ?? '')
    const data = task.json('data') ?? {}
    if (!isPlainObject(data))
      throw new TaskError('data must be a JSON object of argument values by name')
    const values = fragment.inputs.map((input) => {
      const name = input.name
      if (!Object.hasOwn(data, name))
        throw new TaskError(`data: no value for argument ${name} (${input.type})`)
      return convert(data[name], input, `data.${name}`)
    })
    const encoded = words && encodeWords(words, values, prefix)
    if (encoded !== undefined) return encoded
    try {
      if (fragment.name === 'anonymous__')
        return AbiCoder.defaultAbiCoder().encode(fragment.inputs, values)
      return iface.encodeFunctionData(fragment, values)
    } catch (error) {
      throw new TaskError(
        `cannot encode ${fragment.format('sighash')}: ${(error as Error).message}`,
      )
    }
  },
}

/**
 * The arguments a JSON object written as `data` leaves out (its `$(...)` standing for values); none
 * when `data` is a variable or not an object (the run says so).
 */
function missingArguments(fragment: FunctionFragment, data: string | undefined): string[] {
  if (data === undefined || /^\s*\$\([^$]*\)\s*$/.test(data)) return []
  let object: unknown
  try {
    object = JSON.parse(data.trim() === '' ? '{}' : replaceVariables(data, () => 'null'))
  } catch {
    return []
  }
  if (!isPlainObject(object)) return []
  return fragment.inputs.map((input) => input.name).filter((name) => !Object.hasOwn(object, name))
}

/** A static ABI check for the loader: an empty list when the ABI text parses, else what it must be. */
export function abiProblem(
  parse: () => unknown,
  expected: string,
): { attribute: string; message: string }[] {
  try {
    parse()
    return []
  } catch (error) {
    const reason = (error as Error).message.replace(/^abi: /, '')
    return [{ attribute: 'abi', message: `${reason}; it must be ${expected}` }]
  }
}

/**
 * Parsed ABIs by their text. A spec's ABI is the same on every run, and parsing it (and building its
 * Interface) was a tenth of the runner's CPU per request. Bounded: cleared when it grows past the cap.
 */
export function memoizedAbi<T>(cache: Map<string, T>, abi: string, parse: (abi: string) => T): T {
  let parsed = cache.get(abi)
  if (parsed === undefined) {
    parsed = parse(abi)
    if (cache.size >= ABI_CACHE_LIMIT) cache.clear()
    cache.set(abi, parsed)
  }
  return parsed
}
const ABI_CACHE_LIMIT = 512
const functionCache = new Map<string, ParsedFunction>()

interface ParsedFunction {
  fragment: FunctionFragment
  iface: Interface
  /** Each argument's kind when abi-words can encode them all (no arrays or tuples), else undefined. */
  words: WordKind[] | undefined
  /** What the encoding starts with: 0x and the selector for `name(...)`, 0x alone for `(...)`. */
  prefix: string
}

function parsedFunction(abi: string): ParsedFunction {
  return memoizedAbi(functionCache, abi, (text) => {
    const fragment = withFixedHash(functionFragment(text))
    const prefix = fragment.name === 'anonymous__' ? '0x' : fragment.selector
    return { fragment, iface: new Interface([fragment]), words: wordKinds(fragment.inputs), prefix }
  })
}

export function functionFragment(abi: string): FunctionFragment {
  const trimmed = abi.trim()
  const signature = trimmed.startsWith('(') ? `anonymous__${trimmed}` : trimmed
  let fragment: FunctionFragment
  try {
    fragment = FunctionFragment.from(`function ${signature}`)
  } catch (error) {
    throw new TaskError(`abi: not a function or argument list (${shortReason(error)})`)
  }
  requireNames(fragment.inputs)
  return fragment
}

/** Every argument named, as Chainlink requires: the data map finds values by name. */
export function requireNames(inputs: readonly ParamType[]): void {
  const unnamed = inputs.findIndex((input) => input.name === '')
  if (unnamed !== -1)
    throw new TaskError(
      `abi: bad ABI specification, missing argument name (argument ${unnamed + 1}, ${inputs[unnamed]!.type})`,
    )
}

/** One argument in the form ethers expects, converted by the ABI type. */
export function convert(value: unknown, type: ParamType, where: string): unknown {
  if (type.isArray()) {
    if (!Array.isArray(value))
      throw new TaskError(
        `${where}: expected an array for ${type.format()}, got ${describe(value)}`,
      )
    if (type.arrayLength >= 0 && value.length !== type.arrayLength)
      throw new TaskError(`${where}: expected ${type.arrayLength} elements, got ${value.length}`)
    return value.map((item, index) => convert(item, type.arrayChildren, `${where}[${index}]`))
  }
  if (type.isTuple()) {
    // A map by component name, or a list in component order (Chainlink takes both).
    if (Array.isArray(value) && value.length === type.components.length)
      return type.components.map((component, index) =>
        convert(value[index], component, `${where}[${index}]`),
      )
    if (!isPlainObject(value))
      throw new TaskError(`${where}: expected an object for ${type.format()}`)
    return type.components.map((component) =>
      convert(value[component.name], component, `${where}.${component.name}`),
    )
  }
  const base = type.type
  if (/^u?int\d*$/.test(base)) return integer(value, base, where)
  if (base === 'bool') return boolean(value, where)
  if (base === 'address') return address(value, where)
  if (base === 'string') return text(value, where)
  if (base === 'bytes') return hexOf(value, where)
  if (/^bytes\d+$/.test(base)) return fixedBytes(value, Number(base.slice(5)), where)
  throw new TaskError(`${where}: type ${base} is not supported`)
}

function integer(value: unknown, base: string, where: string): bigint {
  const bits = Number(base.replace(/^u?int/, '') || '256')
  const unsigned = base.startsWith('u')
  const number =
    typeof value === 'boolean'
      ? BigInt(value)
      : typeof value === 'bigint'
        ? value
        : toBigInt(decimalOf(value, where), 'trunc')
  const min = unsigned ? 0n : -(1n << BigInt(bits - 1))
  const max = unsigned ? (1n << BigInt(bits)) - 1n : (1n << BigInt(bits - 1)) - 1n
  if (number < min || number > max)
    throw new TaskError(`${where}: ${number} is out of range for ${base}`)
  return number
}

function boolean(value: unknown, where: string): boolean {
  if (typeof value === 'boolean') return value
  if (value === 'true') return true
  if (value === 'false') return false
  throw new TaskError(`${where}: expected a boolean, got ${describe(value)}`)
}

function address(value: unknown, where: string): string {
  const hex = value instanceof Uint8Array ? hexOf(value, where) : value
  if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(hex))
    throw new TaskError(`${where}: expected an address, got ${describe(value)}`)
  // Lowercase without a checksum (a keccak per address): abi-words needs only the hex, and ethers'
  // coder takes lowercase addresses (it checksums them itself).
  return hex.toLowerCase()
}

function text(value: unknown, where: string): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value)
  if (isDecimal(value)) return value.toFixed()
  if (value instanceof Uint8Array) return new TextDecoder().decode(value)
  throw new TaskError(`${where}: expected a string, got ${describe(value)}`)
}

function fixedBytes(value: unknown, size: number, where: string): string {
  // As Chainlink: a 0x string is hex; any other string must be exactly `size` bytes long and is taken as they are.
  if (typeof value === 'string' && !value.startsWith('0x') && toUtf8Bytes(value).length !== size) {
    throw new TaskError(
      `${where}: expected ${size} bytes (0x-hex, or text of exactly ${size} bytes), got ${describe(value)}`,
    )
  }
  const bytes = bytesOf(value, where)
  if (bytes.length !== size)
    throw new TaskError(`${where}: expected ${size} bytes, got ${bytes.length}`)
  return hexOf(bytes, where)
}

/** ethers' messages carry a long tail of diagnostics; the first clause says what is wrong. */
export function shortReason(error: unknown): string {
  const message =
    (error as { shortMessage?: string; message?: string }).shortMessage ??
    (error as Error).message ??
    String(error)
  return message.split(' (argument=')[0] ?? message
}
