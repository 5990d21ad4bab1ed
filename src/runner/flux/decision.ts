import { Decimal } from '../../reduce/decimal.ts'
import type { OracleRoundState } from '../../chain/flux/aggregator.ts'

/**
 * Whether a flux monitor submits, decided as Chainlink's flux monitor decides it
 * (core/services/fluxmonitorv2: the deviation checker, the payment checker, pollIfEligible and
 * respondToNewRoundLog), from what the aggregator said and what this node recorded. Pure: every
 * input is given, so each rule is tested alone. A "no" always says why, with a code to act on.
 */

/**
 * What asked: the poll timer, the idle timer (heartbeat), the drumbeat (a cron schedule), or a
 * NewRound log another oracle caused.
 */
export type FluxTrigger = 'poll' | 'idle' | 'drumbeat' | 'new-round'

export type SkipCode =
  | 'not_an_oracle'
  | 'key_elsewhere'
  | 'not_eligible'
  | 'already_submitted'
  | 'own_round'
  | 'underfunded'
  | 'payment_too_low'
  | 'within_threshold'
  | 'out_of_range'

export interface Skip {
  submit: false
  code: SkipCode
  reason: string
}

/** Chainlink keeps an aggregator worth submitting to while it can pay every oracle for 3 rounds. */
export const MIN_FUNDED_ROUNDS = 3n

export interface RoundCheck {
  trigger: FluxTrigger
  oracle: string
  /** The aggregator's oracles (getOracles). */
  oracles: readonly string[]
  /** oracleRoundState(oracle, round): for a NewRound log, of the log's round; else of round 0. */
  state: OracleRoundState
  /** Whether this node has a submission (sent or on its way) for `state.roundId`. */
  submitted: boolean
  /** For a NewRound log: who started the round. */
  startedBy?: string
  /** The job's minPayment (juels); 0 when it names none. */
  minPayment: bigint
}

/**
 * Whether this oracle may and should act on the round the aggregator names, before anything is
 * fetched: Chainlink's order (already answered, started by us, eligible, funded, paid enough).
 */
export function checkRound(check: RoundCheck): { submit: true; roundId: number } | Skip {
  const { state } = check
  const oracle = check.oracle.toLowerCase()
  if (!check.oracles.some((known) => known.toLowerCase() === oracle))
    return skip(
      'not_an_oracle',
      `${check.oracle} is not an oracle of this aggregator: its owner adds it with feedrunner aggregator add-oracles`,
    )
  if (check.submitted)
    return skip(
      'already_submitted',
      `this node has submitted to round ${state.roundId} already (one submission per round)`,
    )
  if (check.trigger === 'new-round' && check.startedBy?.toLowerCase() === oracle)
    return skip('own_round', `round ${state.roundId} was started by this oracle's own submission`)
  if (!state.eligibleToSubmit)
    return skip(
      'not_eligible',
      `the aggregator says ${check.oracle} may not submit to round ${state.roundId} now: it submitted to it already, or started a round within the last restartDelay rounds, or the round is answered and not yet timed out`,
    )
  const reserve = state.paymentAmount * BigInt(state.oracleCount) * MIN_FUNDED_ROUNDS
  if (state.availableFunds < reserve)
    return skip(
      'underfunded',
      `the aggregator holds ${state.availableFunds} juels available, less than ${MIN_FUNDED_ROUNDS} rounds of payments to ${state.oracleCount} oracles (${reserve}): its owner funds it (send LINK, then updateAvailableFunds)`,
    )
  if (state.paymentAmount < check.minPayment)
    return skip(
      'payment_too_low',
      `round ${state.roundId} pays ${state.paymentAmount} juels, less than the job's minPayment ${check.minPayment}`,
    )
  return { submit: true, roundId: state.roundId }
}

/**
 * Which of the node's keys acts as the oracle here: one this process owns (the sender sends from it,
 * so each oracle's submissions are ordered by one process). An oracle key of the node that another
 * process owns is that process's to submit with; with no key an oracle, the first key, which
 * checkRound then refuses by name.
 */
export function chooseOracle(keys: {
  /** The node's sender keys. */
  own: readonly string[]
  /** Those this process owns now. */
  owned: readonly string[]
  oracles: readonly string[]
}): { submit: true; oracle: string } | Skip {
  const lower = (list: readonly string[]) => new Set(list.map((address) => address.toLowerCase()))
  const oracles = lower(keys.oracles)
  const owned = lower(keys.owned)
  const mine = keys.own.filter((address) => oracles.has(address.toLowerCase()))
  const here = mine.find((address) => owned.has(address.toLowerCase()))
  if (here !== undefined) return { submit: true, oracle: here }
  if (mine.length > 0)
    return skip(
      'key_elsewhere',
      `the node's oracle key ${mine.join(', ')} is owned by another runner process now: that process submits`,
    )
  return { submit: true, oracle: keys.own[0] ?? '' }
}

/** A job's thresholds as a node holds them (flux-job.ts: the spec's numbers as 32-bit floats). */
export interface Thresholds {
  /** Percent of the latest submission, as decimal text ("0.5"). */
  relative: string
  /** In the units submitted, as decimal text. */
  absolute: string
}

/** shopspring/decimal's Div, which the node's checker divides with: 16 places, half away from zero. */
const DIVISION_PLACES = 16

/**
 * Chainlink's deviation checker: both thresholds zero, any value goes; otherwise the change must
 * exceed the absolute threshold and reach the relative one (from zero, any change to a non-zero
 * value is an infinite relative change). `next` is the pipeline's result before it is made an
 * integer, as the node compares it.
 */
export function outsideDeviation(current: bigint, next: Decimal, thresholds: Thresholds): boolean {
  const relative = new Decimal(thresholds.relative)
  const absolute = new Decimal(thresholds.absolute)
  if (relative.isZero() && absolute.isZero()) return true
  const diff = new Decimal(current.toString()).minus(next).abs()
  if (!diff.greaterThan(absolute)) return false
  if (current === 0n) return !diff.isZero()
  const ratio = diff.div(new Decimal(current.toString()).abs())
  // Exact to 1,000 digits and cut there (toward zero, which never crosses a half), then rounded.
  const percent = ratio.toDecimalPlaces(DIVISION_PLACES, Decimal.ROUND_HALF_UP).mul(100)
  return !percent.lessThan(relative)
}

export interface SubmissionCheck {
  trigger: FluxTrigger
  roundId: number
  /** The oracle's latest submission (oracleRoundState's latestSubmission). */
  latestSubmission: bigint
  /** The pipeline's result, before it is made the integer submitted. */
  answer: Decimal
  thresholds: Thresholds
  /** The aggregator's bounds on a submission (its constructor's min and max submission values). */
  range: { min: bigint; max: bigint }
}

/**
 * Once the value is fetched: a value the aggregator would refuse is never sent; a poll submits only
 * past the thresholds (the first round always); the heartbeat, the drumbeat and a round another
 * oracle started take the value as it is. Both checks read the decimal, as a node's do (its range
 * check too: 10.5 is over a maximum of 10, although 10 would be submitted).
 */
export function checkSubmission(check: SubmissionCheck): { submit: true } | Skip {
  const { answer, range } = check
  if (answer.lessThan(range.min.toString()) || answer.greaterThan(range.max.toString()))
    return skip(
      'out_of_range',
      `the value ${answer.toFixed()} is outside what the aggregator accepts (${check.range.min} to ${check.range.max})`,
    )
  if (
    check.trigger === 'poll' &&
    check.roundId > 1 &&
    !outsideDeviation(check.latestSubmission, answer, check.thresholds)
  )
    return skip(
      'within_threshold',
      `the value ${answer.toFixed()} is within the thresholds of the latest submission ${check.latestSubmission} (threshold ${check.thresholds.relative}%, absoluteThreshold ${check.thresholds.absolute})`,
    )
  return { submit: true }
}

/**
 * When the heartbeat is next due (unix seconds): the idle period after the latest round started, as
 * Chainlink's idle timer counts it from each round's start.
 */
export function nextHeartbeatAt(lastRoundStartedAt: number, idleTimerMs: number): number {
  return lastRoundStartedAt + Math.ceil(idleTimerMs / 1000)
}

export function heartbeatDue(
  now: number,
  lastRoundStartedAt: number,
  idleTimerMs: number,
): boolean {
  return now >= nextHeartbeatAt(lastRoundStartedAt, idleTimerMs)
}

function skip(code: SkipCode, reason: string): Skip {
  return { submit: false, code, reason }
}
