import { getAddress, type JsonRpcApiProvider } from 'ethers'
import {
  FLUX_TOPICS,
  fluxAggregatorInterface,
  readLatestRound,
  readOracleRoundState,
  type OracleRoundState,
  type RoundData,
} from '../../chain/flux/aggregator.ts'

/**
 * The block the monitor reads at: the last head whose logs it has taken in. A read pinned there
 * misses no log the monitor saw, whatever endpoint answers it.
 */
export interface ReadAt {
  block: number
  /** The block's time (unix seconds). */
  timestamp: number
}

interface KeptRoundState {
  state: OracleRoundState
  /** Chain time (unix seconds) from which the state may no longer hold, without a log. */
  until: number
}

/**
 * What the flux monitor read of one FluxAggregator (0.6), kept until the chain says it changed, so
 * a poll that finds nothing to do asks the chain nothing:
 * - the oracle list: only addOracle and removeOracle change it, and each logs OraclePermissionsUpdated;
 * - the latest round (latestRoundData): a log of the aggregator drops it (an answer logs
 *   AnswerUpdated, and a round timed out is rewritten when the next one starts, which logs NewRound);
 * - each oracle's oracleRoundState(oracle, 0): every storage slot it reads is written only by a
 *   transaction that logs (submit: SubmissionReceived; a round started: NewRound; funds:
 *   AvailableFundsUpdated; payment, delay, counts, timeout: RoundDetailsUpdated; oracles:
 *   OraclePermissionsUpdated), so any log of the aggregator drops it. The one thing besides that
 *   changes its answer is time: timedOut(reportingRoundId) turns true once block.timestamp passes
 *   the round's startedAt + timeout, which the state itself names when it suggests that round, so
 *   it is kept until the chain's clock reaches that instant.
 * The monitor drops everything when it cannot tell that the chain it read extends the one these
 * reads came from (a reorg), or when it stops reading the logs.
 */
export class AggregatorReads {
  private oracles: string[] | undefined
  /** The bounds on a submission: immutable in the contract, so read once. */
  private bounds: { min: bigint; max: bigint } | undefined
  private latest: RoundData | undefined
  private readonly states = new Map<string, KeptRoundState>()
  /** Bumped at each drop: a read in flight across one is used once, not kept. */
  private generation = 0

  constructor(
    private readonly provider: JsonRpcApiProvider,
    readonly address: string,
  ) {}

  /** A log of this aggregator, seen in the monitor's shared log read. */
  onLog(topic0: string | undefined): void {
    if (topic0 === FLUX_TOPICS.oraclePermissionsUpdated) this.oracles = undefined
    this.latest = undefined
    this.states.clear()
    this.generation += 1
  }

  /** Nothing read before holds any longer (a reorg, or logs this process did not read). */
  forget(): void {
    this.onLog(FLUX_TOPICS.oraclePermissionsUpdated)
  }

  /** Drops one oracle's round state (it has just submitted). */
  forgetRoundState(oracle: string): void {
    this.states.delete(getAddress(oracle))
    this.generation += 1
  }

  /** The latest answered round as read from elsewhere at `at` (the monitor's first look). */
  noteLatest(round: RoundData): void {
    this.latest ??= round
  }

  async getOracles(at: ReadAt): Promise<string[]> {
    if (this.oracles) return this.oracles
    const generation = this.generation
    const list = await this.call<string[]>('getOracles', at.block)
    const oracles = list.map((address) => getAddress(address))
    if (generation === this.generation) this.oracles = oracles
    return oracles
  }

  /** minSubmissionValue and maxSubmissionValue. */
  async range(): Promise<{ min: bigint; max: bigint }> {
    this.bounds ??= {
      min: await this.call<bigint>('minSubmissionValue'),
      max: await this.call<bigint>('maxSubmissionValue'),
    }
    return this.bounds
  }

  async latestRound(at: ReadAt): Promise<RoundData> {
    if (this.latest) return this.latest
    const generation = this.generation
    const latest = await readLatestRound(this.provider, this.address, at.block)
    if (generation === this.generation) this.latest = latest
    return latest
  }

  /** oracleRoundState(oracle, 0), as of `at`, at the chain time `now`. */
  async roundState(oracle: string, at: ReadAt, now: number): Promise<OracleRoundState> {
    const key = getAddress(oracle)
    const kept = this.states.get(key)
    if (kept && now < kept.until) return kept.state
    const generation = this.generation
    const state = await readOracleRoundState(this.provider, this.address, key, 0, at.block)
    if (generation === this.generation)
      this.states.set(key, { state, until: heldUntil(state, at.timestamp) })
    return state
  }

  private async call<T>(name: string, blockTag?: number): Promise<T> {
    const data = await this.provider.call({
      to: this.address,
      data: fluxAggregatorInterface.encodeFunctionData(name, []),
      blockTag,
    })
    return fluxAggregatorInterface.decodeFunctionResult(name, data)[0] as T
  }
}

/**
 * Until when a round state read at a block of time `readAt` holds without a log: the suggested
 * round's timeout, if that round had not timed out yet at the block read (timedOut is
 * startedAt + timeout < block.timestamp, and block times only grow); else for as long as no log
 * comes. A state suggesting a round not yet started (startedAt 0) suggests it because the reporting
 * round is supersedable already, and time does not undo that.
 */
function heldUntil(state: OracleRoundState, readAt: number): number {
  const timesOutAt = state.startedAt + state.timeout
  if (state.startedAt > 0 && state.timeout > 0 && readAt <= timesOutAt) return timesOutAt
  return Number.POSITIVE_INFINITY
}
