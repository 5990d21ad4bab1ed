import { describe, expect, it } from 'vitest'
import type { OracleRoundState } from '../../../src/chain/flux/aggregator.ts'
import {
  checkRound,
  checkSubmission,
  chooseOracle,
  heartbeatDue,
  nextHeartbeatAt,
  outsideDeviation,
  type RoundCheck,
  type SubmissionCheck,
} from '../../../src/runner/flux/decision.ts'

// The flux decision as Chainlink's flux monitor makes it, rule by rule.

const ORACLE = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'

const state = (overrides: Partial<OracleRoundState> = {}): OracleRoundState => ({
  eligibleToSubmit: true,
  roundId: 5,
  latestSubmission: 1000n,
  startedAt: 0,
  timeout: 600,
  availableFunds: 10n ** 18n,
  oracleCount: 3,
  paymentAmount: 10n ** 16n,
  ...overrides,
})
const round = (overrides: Partial<RoundCheck> = {}): RoundCheck => ({
  trigger: 'poll',
  oracle: ORACLE,
  oracles: [OTHER, ORACLE.toLowerCase()],
  state: state(),
  submitted: false,
  minPayment: 0n,
  ...overrides,
})
const submission = (overrides: Partial<SubmissionCheck> = {}): SubmissionCheck => ({
  trigger: 'poll',
  roundId: 5,
  latestSubmission: 1000n,
  answer: 1000n,
  thresholds: { relative: '0.5', absolute: '0' },
  range: { min: 0n, max: 10n ** 30n },
  ...overrides,
})

describe('outsideDeviation (Chainlink deviation checker)', () => {
  const t = (relative: string, absolute = '0') => ({ relative, absolute })
  it.each([
    [1000n, 1004n, t('0.5'), false],
    [1000n, 1005n, t('0.5'), true],
    [1000n, 995n, t('0.5'), true],
    [1000n, 996n, t('0.5'), false],
    [1000n, 1000n, t('0', '0'), true],
    [1000n, 1010n, t('0', '10'), false],
    [1000n, 1011n, t('0', '10'), true],
    [1000n, 1011n, t('5', '10'), false],
    [0n, 1n, t('0.5'), true],
    [0n, 0n, t('0.5'), false],
    [-1000n, -990n, t('1'), true],
  ])('latest %s, next %s, %j: %s', (current, next, thresholds, expected) => {
    expect(outsideDeviation(current, next, thresholds)).toBe(expected)
  })
})

describe('checkRound', () => {
  it('submits to the round the aggregator names when every rule allows it', () => {
    expect(checkRound(round())).toEqual({ submit: true, roundId: 5 })
  })
  it.each<[string, Partial<RoundCheck>, string]>([
    ['an address the aggregator does not know', { oracles: [OTHER] }, 'not_an_oracle'],
    ['a round this node submitted to', { submitted: true }, 'already_submitted'],
    [
      'its own NewRound log',
      { trigger: 'new-round', startedBy: ORACLE.toLowerCase() },
      'own_round',
    ],
    ['not eligible', { state: state({ eligibleToSubmit: false }) }, 'not_eligible'],
    [
      'funds for fewer than 3 rounds of every oracle',
      { state: state({ availableFunds: 3n * 3n * 10n ** 16n - 1n }) },
      'underfunded',
    ],
    ['a payment below minPayment', { minPayment: 10n ** 16n + 1n }, 'payment_too_low'],
  ])('skips %s, saying why', (_, overrides, code) => {
    const decided = checkRound(round(overrides))
    expect(decided).toMatchObject({ submit: false, code })
    expect((decided as { reason: string }).reason.length).toBeGreaterThan(20)
  })
  it('answers a round another oracle started', () => {
    expect(checkRound(round({ trigger: 'new-round', startedBy: OTHER }))).toEqual({
      submit: true,
      roundId: 5,
    })
  })
  it('is funded at exactly 3 rounds, and paid at exactly minPayment', () => {
    expect(
      checkRound(
        round({ state: state({ availableFunds: 9n * 10n ** 16n }), minPayment: 10n ** 16n }),
      ),
    ).toMatchObject({ submit: true })
  })
})

describe('checkSubmission', () => {
  it('a poll submits past the threshold only', () => {
    expect(checkSubmission(submission({ answer: 1004n }))).toMatchObject({
      code: 'within_threshold',
    })
    expect(checkSubmission(submission({ answer: 1005n }))).toEqual({ submit: true })
  })
  it('the first round, the heartbeat and a round another started take the value as it is', () => {
    expect(checkSubmission(submission({ roundId: 1 }))).toEqual({ submit: true })
    expect(checkSubmission(submission({ trigger: 'idle' }))).toEqual({ submit: true })
    expect(checkSubmission(submission({ trigger: 'new-round' }))).toEqual({ submit: true })
  })
  it('never sends a value the aggregator would refuse', () => {
    expect(
      checkSubmission(submission({ trigger: 'idle', answer: 11n, range: { min: 0n, max: 10n } })),
    ).toMatchObject({ code: 'out_of_range' })
  })
})

describe('the heartbeat', () => {
  it('is due the idle period after the latest round started', () => {
    expect(nextHeartbeatAt(1_000, 30_000)).toBe(1_030)
    expect(heartbeatDue(1_029, 1_000, 30_000)).toBe(false)
    expect(heartbeatDue(1_030, 1_000, 30_000)).toBe(true)
  })
})

describe('which key acts as the oracle', () => {
  it('an oracle key this process owns; one another process owns is left to it; none an oracle is refused later', () => {
    const oracles = [ORACLE, OTHER]
    expect(chooseOracle({ own: [ORACLE], owned: [ORACLE], oracles })).toEqual({
      submit: true,
      oracle: ORACLE,
    })
    // Two keys of the node, both oracles, each owned by one process: each acts as its own.
    expect(chooseOracle({ own: [ORACLE, OTHER], owned: [OTHER], oracles })).toEqual({
      submit: true,
      oracle: OTHER,
    })
    expect(chooseOracle({ own: [ORACLE], owned: [], oracles })).toMatchObject({
      submit: false,
      code: 'key_elsewhere',
    })
    const stranger = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
    expect(chooseOracle({ own: [stranger], owned: [stranger], oracles })).toEqual({
      submit: true,
      oracle: stranger,
    })
  })
})
