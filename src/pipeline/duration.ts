/**
 * Go duration strings as Chainlink specs write them (`30s`, `1m30s`, `500ms`, `1h`), in milliseconds.
 * Undefined when the text is not a duration.
 */
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y

export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim()
  if (trimmed === '0') return 0
  if (trimmed === '') return undefined
  let total = 0
  PART.lastIndex = 0
  while (PART.lastIndex < trimmed.length) {
    const start = PART.lastIndex
    const match = PART.exec(trimmed)
    if (!match || match.index !== start) return undefined
    total += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? Number.NaN)
  }
  return Number.isFinite(total) ? total : undefined
}
