import { describe, expect, it } from 'vitest'
import { checkInvariants } from '../../chaos/invariants.ts'
import { describeResult } from '../../chaos/report.ts'
import { scheduleOf } from '../../chaos/schedule.ts'
import { A, B, T0, cleanHistory, fault, ms, unanswered } from './history-fixtures.ts'

// What `npm run chaos` prints of a schedule it ran: besides the outcome, how many of the requests it
// made were answered and excused, and the excuse (or the fault) of each one not answered.

describe('the fault search report', () => {
  it('says requests answered / made / excused, and why each one not answered is or is not excused', async () => {
    const history = unanswered(await cleanHistory(), {
      state: 'errored',
      reason: 'the feed service did not answer',
      failureKind: 'unavailable',
      at: ms(T0 + 3),
    })
    history.faults = [fault({ kind: 'kill', label: 'SIGKILL of feeds', part: 'feeds' })]
    const result = {
      schedule: scheduleOf(1),
      timeline: [],
      history,
      violations: checkInvariants(history),
      elapsedMs: 60_000,
      outputs: {},
    }
    const lines = describeResult(result)
    expect(lines).toContain('  mined: 1 fulfilments from the node keys, 0 of them reverted')
    expect(lines).toContain('  requests: 1 answered / 2 made / 1 excused')
    expect(lines).toContain(
      `    request:1 ${B.slice(0, 10)}: excused, errored (unavailable) at 8.0 s, under the SIGKILL of feeds at 5.0-7.0 s`,
    )

    // The same failure with no fault to explain it: not excused, and a violation.
    history.faults = []
    const bare = describeResult({ ...result, violations: checkInvariants(history) })
    expect(bare).toContain('  requests: 1 answered / 2 made / 0 excused')
    const line = bare.find((text) => text.startsWith('    request:1'))
    expect(line).toMatch(/NOT excused, is open on chain: its run errored \(unavailable\) at 8\.0 s/)
    expect(bare.some((text) => text.startsWith('  VIOLATION unexplained-failure'))).toBe(true)
    expect(bare.some((text) => text.includes(A.slice(0, 10)))).toBe(false)
  })

  it('says why each reverted fulfilment is excused, or that it is not', async () => {
    const clean = await cleanHistory()
    // B's fulfilment, sent at head 5, mined after B's cancel in block 6.
    const history = unanswered(clean, { state: 'cancelled', at: ms(T0 + 5) })
    const revertedB = { ...clean.fulfilments[1]!, index: 1, reverted: true }
    history.fulfilments = [...history.fulfilments, revertedB]
    history.cancels = [
      { requestId: B, txHash: `0x${'ee'.repeat(32)}`, block: 6, index: 0, at: T0 + 4 },
    ]
    const result = {
      schedule: scheduleOf(1),
      timeline: [],
      history,
      violations: checkInvariants(history),
      elapsedMs: 60_000,
      outputs: {},
    }
    const reverted = `    reverted ${revertedB.hash.slice(0, 10)} (request:1 ${B.slice(0, 10)}, block 6)`
    expect(describeResult(result)).toContain(
      `${reverted}: excused, the requester's cancel was mined in block 6, after head 5`,
    )
    history.cancels = [{ ...history.cancels[0]!, block: 5 }]
    expect(describeResult(result)).toContain(`${reverted}: NOT excused`)
  })
})
