import { describe, expect, it } from 'vitest'
import { RequesterAdmission } from '../../src/runner/admission.ts'

const ALICE = '0x00000000000000000000000000000000000A11CE'
const BOB = '0x0000000000000000000000000000000000000B0B'

describe('per-requester admission', () => {
  it('refuses a requester at REQUESTER_MAX_CONCURRENT_RUNS while others still get in, and frees a slot on release', () => {
    const admission = new RequesterAdmission({ maxConcurrentRuns: 2, maxRequestsPerMinute: 0 })
    const first = admission.admit(ALICE)
    const second = admission.admit(ALICE.toLowerCase())
    expect(first.ok && second.ok).toBe(true)
    const third = admission.admit(ALICE)
    expect(third).toMatchObject({ ok: false, reasonClass: 'requester_busy' })
    expect(!third.ok && third.reason).toBe(
      `requester ${ALICE} has 2 runs in progress, the most REQUESTER_MAX_CONCURRENT_RUNS (2) allows`,
    )
    expect(admission.admit(BOB).ok).toBe(true)
    if (first.ok) {
      first.release()
      first.release()
    }
    expect(admission.admit(ALICE).ok).toBe(true)
    expect(admission.admit(ALICE).ok).toBe(false)
  })
  it('refuses past REQUESTER_MAX_REQUESTS_PER_MINUTE over a sliding minute', () => {
    let now = 1_000_000
    const admission = new RequesterAdmission(
      { maxConcurrentRuns: 0, maxRequestsPerMinute: 3 },
      () => now,
    )
    for (let index = 0; index < 3; index++) {
      const admitted = admission.admit(ALICE)
      expect(admitted.ok).toBe(true)
      if (admitted.ok) admitted.release()
      now += 10_000
    }
    const refused = admission.admit(ALICE)
    expect(refused).toMatchObject({ ok: false, reasonClass: 'requester_rate_limited' })
    expect(!refused.ok && refused.reason).toContain('REQUESTER_MAX_REQUESTS_PER_MINUTE (3)')
    expect(admission.admit(BOB).ok).toBe(true)
    // The first request leaves the window 60 s after it started.
    now = 1_000_000 + 60_001
    expect(admission.admit(ALICE).ok).toBe(true)
  })
  it('0 turns both bounds off', () => {
    const admission = new RequesterAdmission({ maxConcurrentRuns: 0, maxRequestsPerMinute: 0 })
    for (let index = 0; index < 1_000; index++) expect(admission.admit(ALICE).ok).toBe(true)
  })
})
