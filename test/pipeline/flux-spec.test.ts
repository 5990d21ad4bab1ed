import { describe, expect, it } from 'vitest'
import { loadJobSpec, type Job } from '../../src/pipeline/job-spec/loader.ts'
import { fluxJobOf, isFluxJob, type FluxJob } from '../../src/runner/flux/flux-job.ts'

function loadFluxSpec(text: string, file: string): { job?: FluxJob; problems: unknown[] } {
  const { job, problems } = loadJobSpec(text, file)
  return {
    job: job && isFluxJob(job) ? fluxJobOf(job) : (job as Job | undefined as undefined),
    problems,
  }
}

// Chainlink's published fluxmonitor example (docs.chain.link, "Flux Monitor Jobs"), with its URLs and
// address changed only, and the refusals of what would never start a round or cannot run here.

const published = (overrides: Record<string, string> = {}) => {
  const fields: Record<string, string> = {
    type: '"fluxmonitor"',
    schemaVersion: '1',
    name: '"example flux monitor spec"',
    contractAddress: '"0x3cCad4715152693fE3BC4460591e3D3Fbd071b42"',
    externalJobID: '"0EEC7E1D-D0D2-476C-A1A8-72DFB6633F03"',
    threshold: '0.5',
    absoluteThreshold: '0.0',
    idleTimerPeriod: '"1s"',
    idleTimerDisabled: 'false',
    pollTimerPeriod: '"1m"',
    pollTimerDisabled: 'false',
    ...overrides,
  }
  return `${Object.entries(fields)
    .filter(([, value]) => value !== '')
    .map(([key, value]) => `${key} = ${value}`)
    .join('\n')}
observationSource = """
    // data source 1
    ds1 [type="http" method=GET url="http://127.0.0.1:8090/one"
         requestData="{\\\\"coin\\\\": \\\\"ETH\\\\", \\\\"market\\\\": \\\\"USD\\\\"}"]
    ds1_parse [type="jsonparse" path="data,result"]
    // data source 2
    ds2 [type="http" method=GET url="http://127.0.0.1:8090/two"
         requestData="{\\\\"coin\\\\": \\\\"ETH\\\\", \\\\"market\\\\": \\\\"USD\\\\"}"]
    ds2_parse [type="jsonparse" path="data,result"]
    ds1 -> ds1_parse -> medianized_answer
    ds2 -> ds2_parse -> medianized_answer
    medianized_answer [type=median]
"""
`
}

describe('fluxmonitor specs', () => {
  it("loads Chainlink's published example: fields, timers and the pipeline's one result", () => {
    const { job, problems } = loadFluxSpec(published(), 'flux.toml')
    expect(problems).toEqual([])
    expect(job).toMatchObject({
      spec: {
        type: 'fluxmonitor',
        externalJobID: '0eec7e1d-d0d2-476c-a1a8-72dfb6633f03',
        threshold: '0.5',
        absoluteThreshold: '0',
      },
      pollTimerMs: 60_000,
      idleTimerMs: 1_000,
      terminal: ['medianized_answer'],
    })
    expect(job!.tasks.map((task: { id: string }) => task.id)).toContain('ds2_parse')
  })

  it('takes minPayment and evmChainID as Chainlink does, text or number', () => {
    const { job, problems } = loadFluxSpec(
      published({ minPayment: '"1000000000000000"', evmChainID: '"31337"' }),
      'flux.toml',
    )
    expect(problems).toEqual([])
    expect(job!.spec.minPayment).toBe(10n ** 15n)
    expect(job!.spec.evmChainID).toBe(31337n)
  })

  it('loads it with the drumbeat on and the idle timer off: the schedule and the random delay', () => {
    const { job, problems } = loadFluxSpec(
      published({
        idleTimerDisabled: 'true',
        drumbeatEnabled: 'true',
        drumbeatSchedule: '"CRON_TZ=UTC 0 */20 * * * *"',
        drumbeatRandomDelay: '"10s"',
      }),
      'flux.toml',
    )
    expect(problems).toEqual([])
    expect(job!.idleTimerMs).toBeUndefined()
    expect(job!.drumbeat).toMatchObject({
      schedule: { kind: 'pattern', tz: 'UTC', text: 'CRON_TZ=UTC 0 */20 * * * *' },
      randomDelayMs: 10_000,
    })
  })

  it.each([
    [{ pollTimerPeriod: '"1s"' }, 'pollTimerPeriod', /shorter than a fetch may take \(15s/],
    [{ pollTimerPeriod: '' }, 'pollTimerPeriod', /required unless pollTimerDisabled = true/],
    [{ idleTimerPeriod: '' }, 'idleTimerPeriod', /required unless idleTimerDisabled = true/],
    [
      { pollTimerDisabled: 'true', idleTimerDisabled: 'true' },
      'pollTimerDisabled',
      /would only ever answer rounds others start/,
    ],
    [{ threshold: '-1' }, 'threshold', /must be a non-negative number/],
    [
      { contractAddress: '"0x3ccad4715152693fe3bc4460591e3d3fbd071b4"' },
      'contractAddress',
      /address/,
    ],
    [{ minpayment: '"1"' }, 'minpayment', /unknown field minpayment/],
    [
      { drumbeatEnabled: 'true', drumbeatSchedule: '"CRON_TZ=UTC 0 */20 * * * *"' },
      'idleTimerDisabled',
      /with drumbeatEnabled = true the idle timer must be off, as a Chainlink node requires/,
    ],
  ])('refuses %j, naming %s', (overrides, field, message) => {
    const { job, problems } = loadFluxSpec(published(overrides), 'flux.toml')
    expect(job).toBeUndefined()
    expect(problems).toContainEqual(
      expect.objectContaining({ field, message: expect.stringMatching(message) }),
    )
  })

  it('allows a short poll when the tasks say how long a fetch may take', () => {
    const text = published({ pollTimerPeriod: '"2s"' }).replaceAll(
      '[type="http"',
      '[type="http" timeout="1s"',
    )
    const { job, problems } = loadFluxSpec(text, 'flux.toml')
    expect(problems).toEqual([])
    expect(job!.pollTimerMs).toBe(2_000)
  })
})
