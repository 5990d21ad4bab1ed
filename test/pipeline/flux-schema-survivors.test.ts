import { describe, expect, it } from 'vitest'
import { loadJobSpec, type SpecProblem } from '../../src/pipeline/index.ts'

// A fluxmonitor spec's timers and drumbeat fields: when polling may be off, how short a poll may be,
// and the refusal of a field that is not what it says, each on a small spec with one task.

const FIELDS: Record<string, string> = {
  type: '"fluxmonitor"',
  schemaVersion: '1',
  name: '"flux edges"',
  contractAddress: '"0x3cCad4715152693fE3BC4460591e3D3Fbd071b42"',
  idleTimerPeriod: '"1m"',
  pollTimerPeriod: '"1m"',
}

/** The spec with `overrides` (an empty value leaves the field out), and what loading it gives. */
function load(overrides: Record<string, string>): SpecProblem[] {
  const fields = Object.entries({ ...FIELDS, ...overrides }).filter(([, value]) => value !== '')
  const text = `${fields.map(([key, value]) => `${key} = ${value}`).join('\n')}
observationSource = """
  value [type="multiply" input=2 times=3]
"""
`
  const { job, problems } = loadJobSpec(text, 'flux.toml')
  expect(job === undefined).toBe(problems.length > 0)
  return problems
}

const messagesOf = (problems: SpecProblem[]) =>
  problems.map((problem) => `${problem.field ?? ''}: ${problem.message}`)

describe('fluxmonitor timers', () => {
  it('takes a spec whose polling is off and that has no poll period, the heartbeat on', () => {
    expect(messagesOf(load({ pollTimerDisabled: 'true', pollTimerPeriod: '' }))).toEqual([])
  })

  it('takes a poll exactly as long as the longest a fetch may take (15s)', () => {
    expect(messagesOf(load({ pollTimerPeriod: '"15s"' }))).toEqual([])
  })

  it("reads maxTaskDuration as the longest a fetch may take, when it is under Chainlink's 15s", () => {
    expect(messagesOf(load({ maxTaskDuration: '"2s"', pollTimerPeriod: '"2s"' }))).toEqual([])
    expect(messagesOf(load({ maxTaskDuration: '"2s"', pollTimerPeriod: '"1s"' }))).toEqual([
      expect.stringMatching(
        /^pollTimerPeriod: pollTimerPeriod 1s is shorter than a fetch may take \(2s: /,
      ),
    ])
  })
})

describe('fluxmonitor fields refused on their own', () => {
  it('refuses a period that is not a duration, naming its field', () => {
    expect(messagesOf(load({ drumbeatRandomDelay: '"soon"' }))).toEqual([
      expect.stringMatching(/^drumbeatRandomDelay: .*must be a duration such as "30s"/),
    ])
  })

  it("refuses a drumbeat schedule that is not one when the drumbeat is on, in the schedule's words", () => {
    const drumbeat = { drumbeatEnabled: 'true', idleTimerDisabled: 'true', idleTimerPeriod: '' }
    expect(messagesOf(load({ ...drumbeat, drumbeatSchedule: '"whenever"' }))).toEqual([
      expect.stringMatching(
        /^drumbeatSchedule: .*needs a time zone \(CRON_TZ=\.\.\.\) or the @every form/,
      ),
    ])
  })

  it('takes the drumbeat with the idle timer off, and refuses it beside the heartbeat', () => {
    const schedule = '"CRON_TZ=UTC 0 */20 * * * *"'
    expect(
      messagesOf(
        load({
          drumbeatEnabled: 'true',
          drumbeatSchedule: schedule,
          drumbeatRandomDelay: '"10s"',
          idleTimerDisabled: 'true',
          idleTimerPeriod: '',
        }),
      ),
    ).toEqual([])
    expect(messagesOf(load({ drumbeatEnabled: 'true', drumbeatSchedule: '"@every 30s"' }))).toEqual(
      [
        'idleTimerDisabled: with drumbeatEnabled = true the idle timer must be off, as a Chainlink node requires: set idleTimerDisabled = true (the drumbeat starts the rounds the heartbeat would)',
      ],
    )
    // The drumbeat alone starts rounds: polling and the heartbeat may both be off.
    expect(
      messagesOf(
        load({
          drumbeatEnabled: 'true',
          drumbeatSchedule: schedule,
          idleTimerDisabled: 'true',
          pollTimerDisabled: 'true',
        }),
      ),
    ).toEqual([])
  })

  // Chainlink's fluxmonitorv2 validate reads drumbeatSchedule only when drumbeatEnabled is true: a
  // node takes a spec whose unused schedule is left over, so feedrunner does too.
  it('takes any drumbeat schedule while the drumbeat is off, as a node does', () => {
    expect(messagesOf(load({ drumbeatSchedule: '"whenever"' }))).toEqual([])
    expect(messagesOf(load({ drumbeatEnabled: 'false', drumbeatSchedule: '""' }))).toEqual([])
    expect(messagesOf(load({ drumbeatSchedule: '5' }))).toEqual([
      expect.stringMatching(/^drumbeatSchedule: .*must be a schedule such as/),
    ])
  })
})
