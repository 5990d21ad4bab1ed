import { toDecimal } from '../reduce/index.ts'
import { parseDuration } from './duration.ts'
import { replaceVariables, wholeVarExpression } from './vars.ts'

/**
 * What an attribute takes, so that a value written in the spec is checked when the spec is loaded
 * (`jobs validate`, the runner's start) with the same rules the task applies when it runs: a spec that
 * validates does not fail for a reason validation could see. A whole `$(...)` is known only at run time.
 */
export type AttributeKind =
  /** A decimal number (Chainlink's DecimalParam): `100`, `-2.5`, `1e18`. */
  | 'decimal'
  /** A decimal that must not be zero (a divisor). */
  | 'nonzeroDecimal'
  /** A whole number that fits an int32, sign allowed (`precision`). */
  | 'int32'
  /** A whole number from 0 (`gasLimit`, `minConfirmations`). */
  | 'uint'
  /** A whole number from 0 written in the spec, never a variable (`allowedFaults`, as Chainlink reads it). */
  | 'literalUint'
  /** Go's strconv.ParseBool: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False. */
  | 'boolean'
  /** A boolean written in the spec, never a variable: a switch whoever makes a request must not turn. */
  | 'literalBoolean'
  /** A 0x address of 20 bytes. */
  | 'address'
  /** A JSON list of 0x addresses (ethtx `from`). */
  | 'addresses'
  /** 0x and whole bytes. */
  | 'hex'
  /** A duration such as "10s". */
  | 'duration'
  /** The block a chain read is made at: latest, pending or a block number (chain-params.ts). */
  | 'block'
  /** Only a `$(variable)`: Chainlink ignores a literal here. */
  | 'variable'

const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True'])
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False'])

/** Go's strconv.ParseBool, which Chainlink's BoolParam uses; undefined when the text is neither. */
export function parseBoolText(text: string): boolean | undefined {
  if (TRUE_WORDS.has(text)) return true
  if (FALSE_WORDS.has(text)) return false
  return undefined
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const INT32_MAX = 2 ** 31 - 1

/** Why an attribute's text is not a `kind`, or undefined when it is (or is a variable, known at run time). */
export function attributeProblem(kind: AttributeKind, text: string): string | undefined {
  if (text.trim() === '') return undefined
  if (wholeVarExpression(text) === undefined) return literalProblem(kind, text)
  if (kind === 'literalUint')
    return 'must be a whole number written in the spec: Chainlink does not read a variable here'
  if (kind === 'literalBoolean')
    return 'must be true or false written in the spec: a variable would let a request choose it'
  return undefined
}

/** Why `text` is not a `kind`, or undefined when it is. */
export function literalProblem(kind: AttributeKind, text: string): string | undefined {
  const value = text.trim()
  switch (kind) {
    case 'decimal':
    case 'nonzeroDecimal': {
      const decimal = toDecimal(value)
      if (decimal === undefined) return `must be a number, got ${shown(text)}`
      if (kind === 'nonzeroDecimal' && decimal.isZero()) return 'must not be zero'
      return undefined
    }
    case 'int32':
      return /^[+-]?\d+$/.test(value) && Math.abs(Number(value)) <= INT32_MAX
        ? undefined
        : `must be a whole number (int32), got ${shown(text)}`
    case 'uint':
    case 'literalUint':
      return /^\d+$/.test(value) && Number.isSafeInteger(Number(value))
        ? undefined
        : `must be a whole number from 0, got ${shown(text)}`
    case 'boolean':
    case 'literalBoolean':
      return parseBoolText(value) === undefined
        ? `must be true or false, got ${shown(text)}`
        : undefined
    case 'address':
      return ADDRESS.test(value)
        ? undefined
        : `must be a 0x address of 20 bytes, got ${shown(text)}`
    case 'addresses':
      return addressesProblem(value)
    case 'hex':
      // Untrimmed: a run reads " 0xab" as the UTF-8 bytes of that text (as a node does), not as hex.
      return /^0x(?:[0-9a-fA-F]{2})*$/.test(text)
        ? undefined
        : `must be 0x-hex of whole bytes, got ${shown(text)}`
    case 'duration':
      return parseDuration(value) === undefined
        ? `must be a duration such as "10s", got ${shown(text)}`
        : undefined
    case 'block':
      return value === 'latest' || value === 'pending' || /^\d+$/.test(value)
        ? undefined
        : `must be latest, pending or a block number, got ${shown(text)}`
    case 'variable':
      return `must be a $(variable): Chainlink ignores a value written here and reads the task's input instead, got ${shown(text)}`
  }
}

/**
 * `from` is JSON with variables, as a node reads it (JSONWithVarExprs): each `$(...)` stands for a
 * whole value known at run time, so only the items written in the spec are checked here.
 */
function addressesProblem(text: string): string | undefined {
  const expected = `must be a JSON list of 0x addresses such as ["0x9fE4...a6e0"], got ${shown(text)}`
  try {
    const list = JSON.parse(replaceVariables(text, () => JSON.stringify(VARIABLE_MARK))) as unknown
    if (!Array.isArray(list) || list.length === 0) return expected
    return list.every(
      (item) => item === VARIABLE_MARK || (typeof item === 'string' && ADDRESS.test(item)),
    )
      ? undefined
      : expected
  } catch {
    return expected
  }
}

/** What a `$(...)` in `from` stands as while it is checked: a spec cannot write it, its `$(` is replaced. */
const VARIABLE_MARK = '$(variable)'

function shown(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text)
}
