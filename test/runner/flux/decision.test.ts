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
import { asFloat32 } from '../../../src/pipeline/job-spec/flux-schema.ts'
import { Decimal } from '../../../src/reduce/decimal.ts'

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
  answer: new Decimal(1000),
  thresholds: { relative: '0.5', absolute: '0' },
  range: { min: 0n, max: 10n ** 30n },
  ...overrides,
})

/** A result that was a whole number. */
const d = (value: bigint) => new Decimal(value.toString())

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
    expect(outsideDeviation(current, d(next), thresholds)).toBe(expected)
  })

  // A node holds the thresholds as float32 (FluxMonitorSpec) and reads them with NewFromFloat.
  it('compares with the threshold as a float32, as every Chainlink node of the feed does', () => {
    expect(asFloat32('0.1')).toBe('0.10000000149011612')
    expect(asFloat32('0.5')).toBe('0.5')
    expect(asFloat32('1e-14')).toBe('9.9999998245167e-15')
    // Exactly 0.1 %: short of 0.10000000149011612 %, so not past the threshold.
    expect(outsideDeviation(10n ** 9n, d(10n ** 9n + 10n ** 6n), t(asFloat32('0.1')))).toBe(false)
    expect(outsideDeviation(10n ** 9n, d(10n ** 9n + 10n ** 6n + 2n), t(asFloat32('0.1')))).toBe(
      true,
    )
    expect(outsideDeviation(1000n, d(1005n), t(asFloat32('0.5')))).toBe(true)
  })

  // shopspring/decimal's Div keeps 16 places, rounding half away from zero.
  it('divides as the node does: the ratio rounded to 16 places before it is a percentage', () => {
    // 1 / 2e16 = 5e-17, which rounds up to 1e-16: 1e-14 %, past a float32 1e-14.
    expect(outsideDeviation(2n * 10n ** 16n, d(2n * 10n ** 16n + 1n), t(asFloat32('1e-14')))).toBe(
      true,
    )
    // 1 / 3e16 rounds down to 0: no relative change at all.
    expect(outsideDeviation(3n * 10n ** 16n, d(3n * 10n ** 16n + 1n), t(asFloat32('1e-14')))).toBe(
      false,
    )
  })

  it('compares the decimal result, before what is after the point is dropped', () => {
    // 995.5 is 0.45 % off 1000, within 0.5 %; the 995 it would be submitted as is 0.5 % off.
    expect(outsideDeviation(1000n, new Decimal('995.5'), t('0.5'))).toBe(false)
    expect(outsideDeviation(1000n, d(995n), t('0.5'))).toBe(true)
    expect(outsideDeviation(0n, new Decimal('0.4'), t('0.5'))).toBe(true)
    expect(outsideDeviation(1000n, new Decimal('1000.9'), t('0', '1'))).toBe(false)
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
    expect(checkSubmission(submission({ answer: new Decimal(1004) }))).toMatchObject({
      code: 'within_threshold',
    })
    expect(checkSubmission(submission({ answer: new Decimal(1005) }))).toEqual({ submit: true })
  })
  it('the first round, the heartbeat and a round another started take the value as it is', () => {
    expect(checkSubmission(submission({ roundId: 1 }))).toEqual({ submit: true })
    expect(checkSubmission(submission({ trigger: 'idle' }))).toEqual({ submit: true })
    expect(checkSubmission(submission({ trigger: 'new-round' }))).toEqual({ submit: true })
  })
  it('never sends a value the aggregator would refuse', () => {
    const range = { min: 0n, max: 10n }
    expect(
      checkSubmission(submission({ trigger: 'idle', answer: new Decimal(11), range })),
    ).toMatchObject({ code: 'out_of_range' })
    // As a node's range check reads it: 10.5 is over 10, although 10 would be submitted.
    expect(
      checkSubmission(submission({ trigger: 'idle', answer: new Decimal('10.5'), range })),
    ).toMatchObject({ code: 'out_of_range', reason: expect.stringContaining('10.5 is outside') })
    expect(
      checkSubmission(submission({ trigger: 'idle', answer: new Decimal('-0.5'), range })),
    ).toMatchObject({ code: 'out_of_range' })
    expect(
      checkSubmission(submission({ trigger: 'idle', answer: new Decimal(10), range })),
    ).toEqual({ submit: true })
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
