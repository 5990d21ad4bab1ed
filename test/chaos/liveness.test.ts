import { describe, expect, it } from 'vitest'
import type { History, RunFact } from '../../chaos/history.ts'
import { checkInvariants } from '../../chaos/invariants.ts'
import { A, B, cleanHistory, invariantsOf, ms, NODE_1, T0 } from './history-fixtures.ts'

/** Liveness: what excuses a request the chain shows unanswered (chaos/liveness.ts). */
describe('fault search liveness: excuses', () => {
  it('excuse a request refused by requester admission by its code, and no other refusal', async () => {
    const history = await cleanHistory()
    const refused = (failureCode?: string): RunFact => ({
      state: 'refused',
      reason: 'the requester has too many runs in progress',
      failureKind: 'not_authorised',
      ...(failureCode ? { failureCode } : {}),
      at: ms(T0 + 2),
    })
    const refusedAll = (run: RunFact): History => ({
      ...history,
      responses: [],
      fulfilments: [],
      signed: [],
      values: new Map(),
      fates: new Map(),
      keys: [{ address: NODE_1, latest: 0, pending: 0, inPool: 0 }],
      runs: new Map([
        [A, run],
        [B, run],
      ]),
    })
    expect(checkInvariants(refusedAll(refused('requester_busy')))).toEqual([])
    expect(checkInvariants(refusedAll(refused('requester_rate_limited')))).toEqual([])
    // The same kind without the admission's code (a requester not allowed, say) is not excused.
    expect(invariantsOf(refusedAll(refused('requester_not_allowed')))).toEqual([
      'unexplained-failure',
      'unexplained-failure',
    ])
    expect(invariantsOf(refusedAll(refused()))).toEqual([
      'unexplained-failure',
      'unexplained-failure',
    ])
  })
})
