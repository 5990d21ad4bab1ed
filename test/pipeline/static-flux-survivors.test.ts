import { describe, expect, it } from 'vitest'
import { loadJobSpec, parseSchedule, type SpecProblem } from '../../src/pipeline/index.ts'
import { runTask, taskFailure } from './support/task.ts'
import { fluxJobOf, isFluxJob } from '../../src/runner/flux/flux-job.ts'

// What a spec author sees of the parts of a fluxmonitor spec, a schedule and a few tasks that are
// fixed as the modules load: a quoted threshold taken or refused, the purpose a missing field's
// message gives, the patterns the descriptors stand for, the attributes lessthan, merge and the
// base64 tasks take in a spec, and the padded base64 a decode takes.

const FLUX: Record<string, string> = {
  type: '"fluxmonitor"',
  schemaVersion: '1',
  name: '"static flux"',
  contractAddress: '"0x3cCad4715152693fE3BC4460591e3D3Fbd071b42"',
  idleTimerPeriod: '"1m"',
  pollTimerPeriod: '"1m"',
}

/** A fluxmonitor spec with `overrides` (an empty value leaves the field out) and `dot` as its tasks. */
function fluxSpec(
  overrides: Record<string, string>,
  dot = 'value [type="multiply" input=2 times=3]',
) {
  const fields = Object.entries({ ...FLUX, ...overrides }).filter(([, value]) => value !== '')
  const text = `${fields.map(([key, value]) => `${key} = ${value}`).join('\n')}
observationSource = """
  ${dot}
"""
`
  return loadJobSpec(text, 'flux.toml')
}

const messagesOf = (problems: SpecProblem[]) =>
  problems.map((problem) => `${problem.field ?? problem.task ?? ''}: ${problem.message}`)

/** The threshold a quoted `threshold` loads as, or the problems it is refused with. */
function quotedThreshold(text: string): string | string[] {
  const { job, problems } = fluxSpec({ threshold: JSON.stringify(text) })
  if (job === undefined) return messagesOf(problems)
  expect(problems).toEqual([])
  return (job.spec as { threshold?: string }).threshold ?? 'none'
}

const THRESHOLD_REFUSED = (text: string) => [
  `threshold: threshold must be a non-negative number such as 0.5, got ${JSON.stringify(text)}`,
]

describe('a fluxmonitor threshold written as TOML text', () => {
  it('takes a whole or decimal number of any length', () => {
    for (const text of ['0', '1', '10', '250', '0.5', '0.25', '12.125'])
      expect(quotedThreshold(text)).toBe(text)
  })

  // A node reads a quoted threshold with Go's strconv.ParseFloat (tomlutils.Float32), which takes a
  // leading + or dot, a trailing dot and an exponent: a spec written so must load here too.
  it("takes every decimal spelling a Chainlink node's ParseFloat takes, as the decimal it is", () => {
    const read = Object.fromEntries(
      ['.5', '.25', '5.', '+0.5', '1e2', '1e10', '1E-1', '2.5e+1', '007'].map((text) => [
        text,
        quotedThreshold(text),
      ]),
    )
    expect(read).toEqual({
      '.5': '0.5',
      '.25': '0.25',
      '5.': '5',
      '+0.5': '0.5',
      '1e2': '100',
      '1e10': '10000000000',
      '1E-1': '0.1',
      '2.5e+1': '25',
      '007': '7',
    })
  })

  it('refuses text that is not a non-negative number, naming the field and what it takes', () => {
    const refused = [
      '-1',
      'abc',
      'x0.5',
      '0.5%',
      '1.x',
      '1 percent',
      '',
      '.',
      'e5',
      '1e',
      '+',
      ' 1',
      '1e99999999999999999',
    ]
    for (const text of refused) expect(quotedThreshold(text)).toEqual(THRESHOLD_REFUSED(text))
  })

  it('is compared as the float32 a node holds, and shown as written', () => {
    const { job } = fluxSpec({ threshold: '0.1', absoluteThreshold: '0.3' })
    if (!job || !isFluxJob(job)) throw new Error('the spec did not load as a fluxmonitor job')
    expect(job.spec.threshold).toBe('0.1')
    expect(fluxJobOf(job).thresholds).toEqual({
      relative: '0.10000000149011612',
      absolute: '0.30000001192092896',
    })
  })

  // ParseFloat(text, 32) refuses what a float32 cannot hold (ErrRange), as go-toml does a number.
  it('refuses a threshold past what a float32 holds, and takes the largest it holds', () => {
    expect(quotedThreshold('3.4e38')).toBe('3.4e+38')
    for (const text of ['3.5e38', '1e39'])
      expect(quotedThreshold(text)).toEqual([
        `threshold: threshold must fit a 32-bit float (at most 3.4e38), as a node holds a threshold, got ${JSON.stringify(text)}`,
      ])
    expect(messagesOf(fluxSpec({ absoluteThreshold: '1e39' }).problems)).toEqual([
      'absoluteThreshold: absoluteThreshold must fit a 32-bit float (at most 3.4e38), as a node holds a threshold, got 1e+39',
    ])
  })
})

describe('what a fluxmonitor message says a field is for', () => {
  it('says what a missing contractAddress is', () => {
    expect(messagesOf(fluxSpec({ contractAddress: '' }).problems)).toEqual([
      'contractAddress: contractAddress is required in a fluxmonitor spec: the FluxAggregator contract this job submits to',
    ])
  })

  it('says what the heartbeat and the poll are when a spec leaves them out', () => {
    expect(messagesOf(fluxSpec({ idleTimerPeriod: '', pollTimerPeriod: '' }).problems)).toEqual([
      'pollTimerPeriod: pollTimerPeriod is required unless pollTimerDisabled = true: how often the value is fetched and compared with the latest submission',
      'idleTimerPeriod: idleTimerPeriod is required unless idleTimerDisabled = true: the heartbeat: a round is started this long after the last one started',
    ])
  })

  it('says what a period takes when it is not a duration', () => {
    expect(messagesOf(fluxSpec({ idleTimerPeriod: '"often"' }).problems)).toEqual([
      'idleTimerPeriod: idleTimerPeriod must be a duration such as "30s", "1m" or "0s" (no limit), got "often"',
    ])
  })
})

describe('a schedule descriptor', () => {
  it('stands for the six fields robfig/cron gives it, read in UTC', () => {
    const patterns = Object.fromEntries(
      ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight'].map((text) => {
        const parsed = parseSchedule(text)
        return [
          text,
          'schedule' in parsed && parsed.schedule.kind === 'pattern' ? parsed.schedule : parsed,
        ]
      }),
    )
    expect(patterns).toEqual({
      '@yearly': { kind: 'pattern', pattern: '0 0 0 1 1 *', tz: 'UTC', text: '@yearly' },
      '@annually': { kind: 'pattern', pattern: '0 0 0 1 1 *', tz: 'UTC', text: '@annually' },
      '@monthly': { kind: 'pattern', pattern: '0 0 0 1 * *', tz: 'UTC', text: '@monthly' },
      '@weekly': { kind: 'pattern', pattern: '0 0 0 * * 0', tz: 'UTC', text: '@weekly' },
      '@daily': { kind: 'pattern', pattern: '0 0 0 * * *', tz: 'UTC', text: '@daily' },
      '@midnight': { kind: 'pattern', pattern: '0 0 0 * * *', tz: 'UTC', text: '@midnight' },
    })
  })

  it('a schedule in neither form is refused with both forms written out', () => {
    const forms =
      'write six fields after a zone, such as "CRON_TZ=UTC 0 */5 * * * *" (second, minute, hour, day, month, weekday), or "@every 30s"'
    expect(parseSchedule('0 */5 * * * *')).toEqual({
      problem: `needs a time zone (CRON_TZ=...) or the @every form, as on a Chainlink node: ${forms}`,
    })
    expect(parseSchedule('CRON_TZ=UTC */5 * * * *')).toEqual({
      problem: `has 5 fields after CRON_TZ, and a Chainlink schedule has exactly 6 (the first is the second): ${forms}`,
    })
  })
})

/** The problems of a fluxmonitor spec whose one task is `dot`. */
const taskProblems = (dot: string) => messagesOf(fluxSpec({}, dot).problems)

describe('the attributes a spec gives lessthan, merge and the base64 tasks', () => {
  it('takes lessthan with left and right, and refuses one without right', () => {
    expect(taskProblems('value [type="lessthan" left="1" right="2"]')).toEqual([])
    expect(taskProblems('value [type="lessthan" left="1"]')).toEqual([
      'value: lessthan needs the attribute right',
    ])
  })

  it('refuses a lessthan side written in the spec that is not a number, naming the side', () => {
    expect(taskProblems('value [type="lessthan" left="one" right="2"]')).toEqual([
      'value: left must be a number, got "one"',
    ])
    expect(taskProblems('value [type="lessthan" left="1" right="two"]')).toEqual([
      'value: right must be a number, got "two"',
    ])
  })

  it('takes merge with left and right, and refuses one without right', () => {
    expect(taskProblems(`value [type="merge" left="{}" right="{\\\\"a\\\\": 1}"]`)).toEqual([])
    expect(taskProblems('value [type="merge" left="{}"]')).toEqual([
      'value: merge needs the attribute right',
    ])
  })

  it('takes base64decode and base64encode with their input', () => {
    expect(taskProblems('value [type="base64decode" input="aGVsbG8="]')).toEqual([])
    expect(taskProblems('value [type="base64encode" input="hello"]')).toEqual([])
  })
})

describe('base64decode reads padded standard base64 only, as Go does', () => {
  const bytes = (text: string) => new TextEncoder().encode(text)

  it('decodes text padded with one or two =', async () => {
    expect(await runTask('base64decode', { input: 'aGVsbA==' })).toEqual(bytes('hell'))
    expect(await runTask('base64decode', { input: 'aGk=' })).toEqual(bytes('hi'))
    expect(await runTask('base64decode', { input: 'aGVsbG8h' })).toEqual(bytes('hello!'))
  })

  it('refuses text whose padding is left out', async () => {
    for (const input of ['aGVsbA', 'aGVsbG8', 'aGk'])
      expect((await taskFailure(runTask('base64decode', { input }))).message).toBe(
        `failed to decode base64 string ${JSON.stringify(input)}`,
      )
  })
})
