import type { z } from 'zod'
import { escapeRegExp } from '../regexp.ts'
import type { SpecProblem } from './problems.ts'
import { SHARED_PURPOSE } from './schema.ts'
import {
  isJobType,
  JOB_TYPES,
  jobTypesInWords,
  type JobSpecFields,
  type JobType,
} from './job-types.ts'

/**
 * The spec's TOML fields, checked against its job type's fields; each problem names the field, its
 * line, what it is for and what it takes, in the schema's own words (never a generic "Invalid
 * input"), and the job type it was read as.
 */
export function checkFields(
  document: Record<string, unknown>,
  text: string,
  file: string,
): { fields?: JobSpecFields; problems: SpecProblem[] } {
  const type = document.type
  if (!isJobType(type)) return { problems: [typeProblem(type, text, file)] }
  const definition = JOB_TYPES[type]
  const parsed = definition.schema.safeParse(document)
  if (parsed.success) return { fields: parsed.data as JobSpecFields, problems: [] }
  const problems: SpecProblem[] = []
  for (const issue of parsed.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        problems.push({
          file,
          line: keyLine(text, key),
          field: key,
          jobType: type,
          message: unknownField(key, type),
        })
      continue
    }
    const field = String(issue.path[0] ?? '')
    problems.push({
      file,
      line: keyLine(text, field),
      field,
      jobType: type,
      message: fieldMessage(issue, document, type),
    })
  }
  return { problems }
}

function typeProblem(type: unknown, text: string, file: string): SpecProblem {
  const runs = `feedrunner runs ${jobTypesInWords()}`
  if (type === undefined)
    return { file, field: 'type', message: `type is required: ${SHARED_PURPOSE.type}; ${runs}` }
  return {
    file,
    line: keyLine(text, 'type'),
    field: 'type',
    message: `type ${shown(type)} is not a job type feedrunner runs: ${runs}`,
  }
}

function purposeOf(field: string, type: JobType): string {
  const own = JOB_TYPES[type].purpose as Readonly<Record<string, string>>
  return own[field] ?? SHARED_PURPOSE[field] ?? field
}

function fieldMessage(
  issue: z.core.$ZodIssue,
  document: Record<string, unknown>,
  type: JobType,
): string {
  const field = String(issue.path[0] ?? '')
  const value = document[field]
  if (value === undefined)
    return `${field} is required in a ${type} spec: ${purposeOf(field, type)}`
  // `requesters[1]`, not `requesters.1`: the element the person has to look at.
  const where = issue.path
    .map((part, index) => (index === 0 ? String(part) : `[${String(part)}]`))
    .join('')
  let got: unknown = value
  for (const part of issue.path.slice(1))
    got = (got as Record<PropertyKey, unknown> | undefined)?.[part as PropertyKey]
  return `${where} ${issue.message}, got ${shown(got)}`
}

function unknownField(key: string, type: JobType): string {
  const known = Object.keys(JOB_TYPES[type].schema.shape)
  const sameLetters = known.find((field) => field.toLowerCase() === key.toLowerCase())
  if (sameLetters)
    return `unknown field ${key}: did you mean ${sameLetters}? (names are case-sensitive)`
  const elsewhere = Object.values(JOB_TYPES)
    .filter((definition) => Object.hasOwn(definition.schema.shape, key))
    .map((definition) => definition.type)
  const belongs =
    elsewhere.length > 0 ? ` (${key} is a field of ${elsewhere.join(', ')} specs)` : ''
  return `unknown field ${key}: a ${type} spec takes ${known.join(', ')}${belongs}`
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
  // The key as written (escaped, not stripped: `my-key` must not find `mykey`), bare or quoted.
  const written = escapeRegExp(key)
  const lines = text.split('\n')
  const index = lines.findIndex((line) =>
    new RegExp(`^\\s*(?:${written}|"${written}"|'${written}')\\s*=`).test(line),
  )
  return index === -1 ? undefined : index + 1
}
