import type { z } from 'zod'
import type { SpecProblem } from './problems.ts'
import { FIELD_PURPOSE, jobSpecFields, type JobSpecFields } from './schema.ts'

const KNOWN_FIELDS = Object.keys(jobSpecFields.shape)

/**
 * The spec's TOML fields, checked; each problem names the field, its line, what it is for and what
 * it takes, in the schema's own words (never a generic "Invalid input").
 */
export function checkFields(
  document: Record<string, unknown>,
  text: string,
  file: string,
): { fields?: JobSpecFields; problems: SpecProblem[] } {
  const parsed = jobSpecFields.safeParse(document)
  if (parsed.success) return { fields: parsed.data, problems: [] }
  const problems: SpecProblem[] = []
  for (const issue of parsed.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        problems.push({ file, line: keyLine(text, key), field: key, message: unknownField(key) })
      continue
    }
    const field = String(issue.path[0] ?? '')
    problems.push({
      file,
      line: keyLine(text, field),
      field,
      message: fieldMessage(issue, document),
    })
  }
  return { problems }
}

function fieldMessage(issue: z.core.$ZodIssue, document: Record<string, unknown>): string {
  const field = String(issue.path[0] ?? '')
  const value = document[field]
  if (value === undefined) return `${field} is required: ${FIELD_PURPOSE[field] ?? field}`
  // `requesters[1]`, not `requesters.1`: the element the person has to look at.
  const where = issue.path
    .map((part, index) => (index === 0 ? String(part) : `[${String(part)}]`))
    .join('')
  let got: unknown = value
  for (const part of issue.path.slice(1))
    got = (got as Record<PropertyKey, unknown> | undefined)?.[part as PropertyKey]
  return `${where} ${issue.message}, got ${shown(got)}`
}

function unknownField(key: string): string {
  const sameLetters = KNOWN_FIELDS.find((known) => known.toLowerCase() === key.toLowerCase())
  if (sameLetters)
    return `unknown field ${key}: did you mean ${sameLetters}? (names are case-sensitive)`
  return `unknown field ${key}: a directrequest spec takes ${KNOWN_FIELDS.join(', ')}`
}

function shown(value: unknown): string {
  if (typeof value === 'string') {
    const text = JSON.stringify(value)
    return text.length > 80 ? `${text.slice(0, 77)}..."` : text
  }
  if (Array.isArray(value)) return `a list of ${value.length}`
  if (value !== null && typeof value === 'object') return 'a table'
  return String(value)
}

/** The 1-based line where a top-level TOML key is set, or undefined. */
export function keyLine(text: string, key: string): number | undefined {
  if (key === '') return undefined
  const lines = text.split('\n')
  const index = lines.findIndex((line) =>
    new RegExp(`^\\s*["']?${key.replace(/[^\w]/g, '')}["']?\\s*=`).test(line),
  )
  return index === -1 ? undefined : index + 1
}
