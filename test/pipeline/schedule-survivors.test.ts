import { describe, expect, it } from 'vitest'
import { parseSchedule } from '../../src/pipeline/index.ts'

// The edges of a cron job's schedule: the least @every, the spacing a pattern may have, the zone a
// descriptor is read in, and the words of each refusal.

function problemOf(text: string): string {
  const parsed = parseSchedule(text)
  expect(parsed).toHaveProperty('problem')
  return 'problem' in parsed ? parsed.problem : ''
}

describe('a schedule: what is taken', () => {
  it('takes "@every 1s", the least a Chainlink node keeps, as one second', () => {
    expect(parseSchedule('@every 1s')).toEqual({
      schedule: { kind: 'every', everyMs: 1000, text: '@every 1s' },
    })
  })

  it('takes a schedule with spaces around it', () => {
    expect(parseSchedule('  @every 30s ')).toEqual({
      schedule: { kind: 'every', everyMs: 30_000, text: '@every 30s' },
    })
  })

  it('reads a descriptor in UTC', () => {
    expect(parseSchedule('@hourly')).toEqual({
      schedule: { kind: 'pattern', pattern: '0 0 * * * *', tz: 'UTC', text: '@hourly' },
    })
  })

  it('takes fields parted by several spaces, and a zone parted from them by a line break', () => {
    const parsed = parseSchedule('CRON_TZ=UTC 0  */5 * * * *')
    expect(parsed).toMatchObject({ schedule: { kind: 'pattern', pattern: '0 */5 * * * *' } })
    expect(parseSchedule('CRON_TZ=UTC \n0 */5 * * * *')).toMatchObject({
      schedule: { kind: 'pattern', pattern: '0 */5 * * * *', tz: 'UTC' },
    })
  })

  it('takes a pattern naming both a day of the month and a weekday, as robfig/cron does', () => {
    expect(parseSchedule('CRON_TZ=Europe/London 0 0 9 1 * MON')).toMatchObject({
      schedule: { kind: 'pattern', pattern: '0 0 9 1 * MON', tz: 'Europe/London' },
    })
  })
})

describe('a schedule: what is refused, and the words', () => {
  it('names every descriptor it knows, parted by commas', () => {
    expect(problemOf('@fortnightly')).toBe(
      '"@fortnightly" is not a descriptor (known: @every <duration>, @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)',
    )
  })

  it('refuses a zone that does not start the text', () => {
    expect(problemOf('every CRON_TZ=UTC 0 */5 * * * *')).toMatch(/^needs a time zone \(CRON_TZ/)
  })

  // robfig splits the fields on any white space, line breaks included, once the zone has ended at
  // the first space: a second line is more fields, and a zone ended by a tab is no zone.
  it('counts a second line as more fields, and takes fields parted by a line break', () => {
    expect(problemOf('CRON_TZ=UTC 0 */5 * * * *\n0 */6 * * * *')).toMatch(
      /^has 12 fields after CRON_TZ, and a Chainlink schedule has exactly 6/,
    )
    expect(parseSchedule('CRON_TZ=UTC 0 */5 *\n* * *')).toMatchObject({
      schedule: { kind: 'pattern', pattern: '0 */5 * * * *', tz: 'UTC' },
    })
    expect(problemOf('CRON_TZ=UTC\t0 */5 * * * *')).toMatch(/ is not an IANA time zone/)
  })

  it('shows the duration it was given, without the spaces before it', () => {
    expect(problemOf('@every   soon')).toBe(
      '@every needs a duration such as "@every 30s" or "@every 1h30m", got "soon"',
    )
    expect(problemOf('@every  500ms')).toBe(
      '@every 500ms is shorter than 1s: a Chainlink node runs it every second; write "@every 1s"',
    )
  })

  it('asks for a duration when given none or zero', () => {
    expect(problemOf('@every')).toMatch(/^@every needs a duration .*, got ""$/)
    expect(problemOf('@every 0')).toMatch(/^@every needs a duration .*, got "0"$/)
  })
})
