import { CronExpressionParser } from 'cron-parser'
import { parseDuration } from '../duration.ts'

/**
 * A cron job's `schedule`, in the two forms Chainlink takes (its `ValidateCronSchedule`, robfig/cron
 * with seconds): six fields after a mandatory `CRON_TZ=<zone>`, or an `@` descriptor (`@every 1h30m`,
 * `@hourly`, ...). `every` counts from when the job was added (Chainlink's words); a pattern is read
 * in its zone.
 */
export type CronSchedule =
  | { kind: 'every'; everyMs: number; text: string }
  | { kind: 'pattern'; pattern: string; tz: string; text: string }

/** robfig/cron's descriptors, in the six fields; a node reads them in its zone, feedrunner in UTC. */
const DESCRIPTORS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 0 1 1 *',
  '@annually': '0 0 0 1 1 *',
  '@monthly': '0 0 0 1 * *',
  '@weekly': '0 0 0 * * 0',
  '@daily': '0 0 0 * * *',
  '@midnight': '0 0 0 * * *',
  '@hourly': '0 0 * * * *',
}

/** The shortest `@every` a robfig schedule keeps (it rounds a shorter one up to it). */
export const MIN_EVERY_MS = 1000

const FORMS =
  'write six fields after a zone, such as "CRON_TZ=UTC 0 */5 * * * *" (second, minute, hour, day, month, weekday), or "@every 30s"'

/** The schedule, or why it is not one (in words that name both forms). */
export function parseSchedule(text: string): { schedule: CronSchedule } | { problem: string } {
  const trimmed = text.trim()
  if (trimmed.startsWith('@every')) return parseEvery(trimmed)
  if (trimmed.startsWith('@')) {
    const pattern = DESCRIPTORS[trimmed]
    if (pattern === undefined)
      return {
        problem: `${JSON.stringify(trimmed)} is not a descriptor (known: @every <duration>, ${Object.keys(DESCRIPTORS).join(', ')})`,
      }
    return { schedule: { kind: 'pattern', pattern, tz: 'UTC', text: trimmed } }
  }
  // As robfig reads it: the zone runs to the first space; the fields are split on any white space.
  const zoned = /^CRON_TZ=([^ ]+) +([\s\S]*)$/.exec(trimmed)
  if (!zoned)
    return {
      problem: `needs a time zone (CRON_TZ=...) or the @every form, as on a Chainlink node: ${FORMS}`,
    }
  const tz = zoned[1]!
  if (!validZone(tz))
    return { problem: `CRON_TZ=${tz} is not an IANA time zone (such as UTC or Europe/London)` }
  const fields = zoned[2]!.trim().split(/\s+/)
  const pattern = fields.join(' ')
  if (fields.length !== 6)
    return {
      problem: `has ${fields.length} fields after CRON_TZ, and a Chainlink schedule has exactly 6 (the first is the second): ${FORMS}`,
    }
  try {
    CronExpressionParser.parse(pattern, { tz, strict: false })
  } catch (error) {
    return {
      problem: `${JSON.stringify(pattern)} is not a cron pattern: ${(error as Error).message}`,
    }
  }
  return { schedule: { kind: 'pattern', pattern, tz, text: trimmed } }
}

function parseEvery(text: string): { schedule: CronSchedule } | { problem: string } {
  const duration = text.slice('@every'.length).trim()
  const ms = parseDuration(duration)
  if (ms === undefined || duration === '' || duration === '0')
    return {
      problem: `@every needs a duration such as "@every 30s" or "@every 1h30m", got ${JSON.stringify(duration)}`,
    }
  if (ms < MIN_EVERY_MS)
    return {
      problem: `@every ${duration} is shorter than 1s: a Chainlink node runs it every second; write "@every 1s"`,
    }
  return { schedule: { kind: 'every', everyMs: Math.round(ms), text } }
}

function validZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz })
    return true
  } catch {
    return false
  }
}
