import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { FluxJobLog } from '../../../src/runner/flux/job-log.ts'

// What a flux job says: by state, not at each look.

function capture(now: () => number) {
  const lines: Array<{ level: number; msg: string; failures?: number }> = []
  const log = pino(
    { level: 'debug' },
    { write: (line: string) => void lines.push(JSON.parse(line)) },
  )
  return { lines, said: new FluxJobLog(log, 'floor', now) }
}

const WARN = 40

describe('FluxJobLog', () => {
  it('says failures when they start, once a minute while they last, and when the job acts again', () => {
    let now = 0
    const { lines, said } = capture(() => now)
    for (; now < 59_000; now += 500) said.failed('idle', 'the bridge datafeed is not answering')
    expect(lines.map((line) => line.msg)).toEqual([
      'flux monitor: could not act; trying again at the next poll, heartbeat or round',
    ])
    now = 60_000
    said.failed('poll', 'the bridge datafeed is not answering')
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatchObject({
      level: WARN,
      msg: 'flux monitor: still cannot act (119 failed since 1970-01-01T00:00:00.000Z)',
      failures: 119,
    })
    said.skipped('poll', { submit: false, code: 'within_threshold', reason: 'within' }, 4)
    expect(lines.slice(2).map((line) => line.msg)).toEqual([
      'flux monitor: acting again after 119 failed tries',
      'flux monitor: within',
    ])
    said.failed('idle', 'again')
    expect(lines.at(-1)?.msg).toMatch(/^flux monitor: could not act/)
  })

  it('says a skip once while it lasts, and again after a submission', () => {
    const { lines, said } = capture(() => 0)
    const skip = { submit: false as const, code: 'not_eligible' as const, reason: 'not now' }
    said.skipped('poll', skip, 3)
    said.skipped('poll', skip, 3)
    said.skipped('idle', skip, 4)
    said.submitting('idle', 4, 10n)
    said.skipped('poll', skip, 4)
    expect(lines.map((line) => line.msg)).toEqual([
      'flux monitor: not now',
      'flux monitor: not now',
      'flux monitor: submitting',
      'flux monitor: not now',
    ])
  })
})
