import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  formatProblem,
  JOB_TYPES,
  loadJobSpec,
  parseSchedule,
  type SpecProblem,
} from '../../src/pipeline/index.ts'

// The job types feedrunner runs, one entry each in JOB_TYPES: Chainlink's published examples of the
// push types load as they are, and every refusal names the job type it was read as.

const SPECS = join(import.meta.dirname, 'specs', 'push')
const published = (file: string) => readFileSync(join(SPECS, file), 'utf8')

function problemsOf(text: string, file = 'jobs/x.toml'): SpecProblem[] {
  return loadJobSpec(text, file).problems
}

const CRON = `type = "cron"
schemaVersion = 1
name = "tick"
schedule = "@every 2s"
observationSource = """
  value [type="multiply" input="3" times=2]
"""
`

describe('job types', () => {
  it('are directrequest, cron, webhook and fluxmonitor, each with what starts its runs', () => {
    expect(Object.keys(JOB_TYPES).sort()).toEqual([
      'cron',
      'directrequest',
      'fluxmonitor',
      'webhook',
    ])
    expect(Object.values(JOB_TYPES).map((type) => type.trigger)).toEqual([
      'request',
      'tick',
      'call',
      'round',
    ])
  })

  it("Chainlink's published cron example loads unchanged", () => {
    const { job, problems } = loadJobSpec(published('docs-cron.toml'), 'jobs/docs-cron.toml')
    expect(problems.map(formatProblem)).toEqual([])
    expect(job!.spec).toMatchObject({
      type: 'cron',
      schedule: 'CRON_TZ=UTC * */20 * * * *',
      evmChainID: 1n,
      externalJobID: '0eec7e1d-d0d2-476c-a1a8-72dfb6633f01',
      // Chainlink's name is optional: the job is named by its file.
      name: 'docs-cron',
    })
    expect(job!.tasks.map((task) => task.id)).toEqual(['fetch', 'parse', 'multiply'])
  })

  it("Chainlink's published webhook example loads unchanged, reading $(jobRun.requestBody)", () => {
    const { job, problems } = loadJobSpec(published('docs-webhook.toml'), 'jobs/docs-webhook.toml')
    expect(problems.map(formatProblem)).toEqual([])
    expect(job!.spec.type).toBe('webhook')
    expect(job!.spec).toMatchObject({
      externalInitiators: [
        { name: 'my-external-initiator-1', spec: '{"foo": 42}' },
        { name: 'my-external-initiator-2', spec: '{}' },
      ],
    })
    expect(job!.externalJobIDDerived).toBe(true)
  })

  it('a type feedrunner does not run is refused with the types it runs', () => {
    const problems = problemsOf(CRON.replace('type = "cron"', 'type = "keeper"'))
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ field: 'type', line: 1 })
    expect(problems[0]!.message).toMatch(
      /^type "keeper" is not a job type feedrunner runs: feedrunner runs directrequest \(.*\); cron \(.*\); webhook \(.*\)$/,
    )
  })

  it('every refusal names the job type it was read as', () => {
    const cases: Array<[string, string, RegExp]> = [
      [
        'no schedule',
        CRON.replace('schedule = "@every 2s"\n', ''),
        /^schedule is required in a cron spec: when the job runs/,
      ],
      [
        'a directrequest field in a cron spec',
        CRON.replace(
          'schedule',
          'contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"\nschedule',
        ),
        /^unknown field contractAddress: a cron spec takes .*schedule.* \(contractAddress is a field of directrequest, fluxmonitor specs\)$/,
      ],
      [
        'a directrequest variable in a cron run',
        CRON.replace('input="3"', 'input="$(jobRun.logData)"'),
        /a cron run has no jobRun\.logData \(it has jobRun\.meta\)/,
      ],
      [
        'requestBody outside a webhook',
        CRON.replace('input="3"', 'input="$(jobRun.requestBody)"'),
        /a cron run has no jobRun\.requestBody/,
      ],
    ]
    for (const [name, text, message] of cases) {
      const problems = problemsOf(text)
      expect(problems.length, name).toBeGreaterThan(0)
      expect(
        problems.some((problem) => message.test(problem.message)),
        `${name}: ${problems.map(formatProblem).join('; ')}`,
      ).toBe(true)
      for (const problem of problems) expect(problem.jobType, name).toBe('cron')
    }
  })

  it('a webhook spec refuses an external initiator that is not a { name, spec } table', () => {
    const text = published('docs-webhook.toml').replace(
      '{ name = "my-external-initiator-2", spec = "{}" }',
      '{ name = "bad name!", spec = "{" }',
    )
    const messages = problemsOf(text).map((problem) => problem.message)
    expect(messages.join('\n')).toContain('externalInitiators[1][name]')
    expect(messages.join('\n')).toContain('[spec] must be JSON text')
  })
})

describe('a cron schedule, in the two forms a Chainlink node takes', () => {
  it.each([
    ['CRON_TZ=UTC * */20 * * * *', 'pattern'],
    ['CRON_TZ=Europe/London 0 0 9 * * MON-FRI', 'pattern'],
    ['@every 2s', 'every'],
    ['@every 1h30m', 'every'],
    ['@hourly', 'pattern'],
  ])('%s is a schedule', (text, kind) => {
    const parsed = parseSchedule(text)
    expect('schedule' in parsed && parsed.schedule.kind).toBe(kind)
  })

  it.each([
    ['*/5 * * * * *', 'needs a time zone (CRON_TZ=...) or the @every form'],
    [
      'CRON_TZ=UTC */5 * * * *',
      'has 5 fields after CRON_TZ, and a Chainlink schedule has exactly 6',
    ],
    ['CRON_TZ=Mars/Olympus * * * * * *', 'CRON_TZ=Mars/Olympus is not an IANA time zone'],
    ['CRON_TZ=UTC 99 * * * * *', 'is not a cron pattern'],
    ['@every soon', '@every needs a duration'],
    ['@every 500ms', 'shorter than 1s'],
    ['@fortnightly', 'is not a descriptor'],
  ])('%s is refused: %s', (text, message) => {
    const parsed = parseSchedule(text)
    expect('problem' in parsed && parsed.problem).toContain(message)
  })

  it('a refused schedule is a problem of the schedule field, on its line', () => {
    const problems = problemsOf(CRON.replace('@every 2s', '*/5 * * * *'))
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatchObject({ field: 'schedule', line: 4, jobType: 'cron' })
  })
})
