import { nestingBeyond } from '../net/bounded-body.ts'
import type { NodeBudget } from '../net/decode-budget.ts'
import { Decimal } from '../reduce/index.ts'

/**
 * JSON.parse, except that numbers a double cannot hold exactly keep their value: integers beyond
 * 2^53 become bigint, other numbers whose digits a double would change become Decimal. Text without a run of 16+ digits cannot hold such a
 * number and takes the fast path.
 * Bounded against a hostile source: nesting deeper than `maxDepth` is refused before parsing (V8's
 * JSON.parse builds 2 million nested arrays, then every recursive walk of them overflows the stack:
 * "Maximum call stack size exceeded" on each retry), and so is a number longer than
 * MAX_NUMBER_CHARS (a uint256 has 78 digits; BigInt of 10^6 digits costs ~1 s of CPU). With a
 * budget, the values the parse would build are counted in the same scan, before any is built
 * (DecodeBudgetError past it).
 */
export function parseJsonLossless(
  text: string,
  maxDepth = DEFAULT_MAX_DEPTH,
  budget?: NodeBudget,
): unknown {
  const tooDeep = nestingBeyond(text, maxDepth, budget)
  if (tooDeep !== undefined) throw new JsonTooDeepError(maxDepth, tooDeep)
  if (!/\d{16,}/.test(text)) return JSON.parse(text) as unknown
  const parser = new Parser(text)
  const value = parser.value(0)
  parser.end()
  return value
}

/** JSON text nested deeper than the parse's bound (JSON_MAX_DEPTH for a task's data). */
export class JsonTooDeepError extends SyntaxError {
  override readonly name = 'JsonTooDeepError'
  constructor(
    readonly maxDepth: number,
    readonly position: number,
  ) {
    super(`nesting deeper than ${maxDepth} at position ${position}`)
  }
}

const DEFAULT_MAX_DEPTH = 64
export const MAX_NUMBER_CHARS = 1_000

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

class Parser {
  private at = 0
  constructor(private readonly text: string) {}

  value(depth: number): unknown {
    this.space()
    const char = this.text[this.at]
    if (char === '{') return this.object(depth)
    if (char === '[') return this.array(depth)
    if (char === '"') return this.string()
    if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) return this.number()
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length
        return value
      }
    }
    return this.fail(`unexpected ${char === undefined ? 'end of input' : JSON.stringify(char)}`)
  }

  end(): void {
    this.space()
    if (this.at < this.text.length)
      this.fail(`unexpected ${JSON.stringify(this.text[this.at])} after the value`)
  }

  private object(depth: number): Record<string, unknown> {
    const result: Record<string, unknown> = {}
    this.at++
    this.space()
    if (this.text[this.at] === '}') {
      this.at++
      return result
    }
    for (;;) {
      this.space()
      if (this.text[this.at] !== '"') this.fail('expected a property name')
      const key = this.string()
      this.space()
      if (this.text[this.at] !== ':') this.fail('expected ":"')
      this.at++
      Object.defineProperty(result, key, {
        value: this.value(depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      })
      this.space()
      const next = this.text[this.at++]
      if (next === '}') return result
      if (next !== ',') this.fail('expected "," or "}"')
    }
  }

  private array(depth: number): unknown[] {
    const result: unknown[] = []
    this.at++
    this.space()
    if (this.text[this.at] === ']') {
      this.at++
      return result
    }
    for (;;) {
      result.push(this.value(depth + 1))
      this.space()
      const next = this.text[this.at++]
      if (next === ']') return result
      if (next !== ',') this.fail('expected "," or "]"')
    }
  }

  private string(): string {
    const start = this.at
    this.at++
    while (this.at < this.text.length) {
      const char = this.text[this.at]
      if (char === '\\') this.at += 2
      else if (char === '"') {
        this.at++
        // The standard parser decodes the escapes of the exact string token.
        return JSON.parse(this.text.slice(start, this.at)) as string
      } else this.at++
    }
    return this.fail('unterminated string')
  }

  private number(): unknown {
    NUMBER.lastIndex = this.at
    const match = NUMBER.exec(this.text)
    if (!match) return this.fail('malformed number')
    if (match[0].length > MAX_NUMBER_CHARS)
      this.fail(`a number of ${match[0].length} characters, longer than ${MAX_NUMBER_CHARS}`)
    this.at += match[0].length
    const text = match[0]
    const number = Number(text)
    if (/^-?\d+$/.test(text)) return Number.isSafeInteger(number) ? number : BigInt(text)
    // A double that prints back as the same decimal value is exact; anything else keeps its digits.
    const exact = new Decimal(text)
    return Number.isFinite(number) && new Decimal(String(number)).equals(exact) ? number : exact
  }

  private space(): void {
    while (this.at < this.text.length && ' \t\n\r'.includes(this.text[this.at]!)) this.at++
  }

  private fail(message: string): never {
    throw new SyntaxError(`${message} at position ${this.at}`)
  }
}
