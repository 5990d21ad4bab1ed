import { getAddress, type JsonRpcApiProvider, type Log } from 'ethers'
import type { Logger } from '../../config/logger.ts'
import {
  FLUX_TOPICS,
  fluxAggregatorInterface,
  readLatestRound,
  readOracleRoundState,
} from '../../chain/flux/aggregator.ts'
import type { TxResult, TxSender } from '../../chain/sender/index.ts'
import {
  checkRound,
  checkSubmission,
  heartbeatDue,
  type FluxTrigger,
  type Skip,
} from './decision.ts'
import type { FluxJob } from './flux-job.ts'

/**
 * The flux monitor of one chain: every fluxmonitor job on it, driven by one loop. Each tick reads the
 * head and, when it moved, the NewRound logs of every aggregator in one eth_getLogs (never a
 * subscription per job); then each job acts on what is due: a round another oracle started, the
 * heartbeat, or its poll. What it submits goes through the node's sender, which simulates it before
 * it signs and sends one transaction per (aggregator, oracle, round) across every process of the
 * node, whichever asked first.
 */
export interface FluxMonitorOptions {
  chainId: number
  provider: JsonRpcApiProvider
  sender: Pick<TxSender, 'submit' | 'bound' | 'addresses'>
  jobs: readonly FluxJob[]
  /** Runs a job's pipeline; its result is the value submitted. */
  observe: (job: FluxJob, meta: Record<string, unknown>) => Promise<bigint>
  log: Logger
  /** How often the loop looks at the chain and the timers (default 500 ms). */
  tickMs?: number
  /** What the monitor decided, each time (tests and metrics read it). */
  onDecision?: (decision: FluxDecision) => void
}

export type FluxDecision =
  | { job: string; trigger: FluxTrigger; roundId?: number; outcome: 'skipped'; skip: Skip }
  | {
      job: string
      trigger: FluxTrigger
      roundId: number
      outcome: 'submitted'
      value: bigint
      result: TxResult
    }
  | { job: string; trigger: FluxTrigger; outcome: 'failed'; error: string }

interface Aggregator {
  address: string
  range?: { min: bigint; max: bigint }
  /** Unix seconds: when the latest round started (the heartbeat counts from it). */
  lastStartedAt?: number
}

interface JobState {
  job: FluxJob
  aggregator: Aggregator
  lastPollMs: number
  busy: boolean
  lastSkip?: string
}

export interface FluxMonitor {
  stop(): Promise<void>
}

export function startFluxMonitor(options: FluxMonitorOptions): FluxMonitor {
  const monitor = new ChainFluxMonitor(options)
  const loop = monitor.run()
  return {
    async stop() {
      monitor.stopped = true
      await loop
    },
  }
}

class ChainFluxMonitor {
  stopped = false
  private readonly aggregators = new Map<string, Aggregator>()
  private readonly states: JobState[]
  private fromBlock: number | undefined
  private readonly log: Logger

  constructor(private readonly options: FluxMonitorOptions) {
    this.log = options.log
    this.states = options.jobs.map((job): JobState => {
      const address = getAddress(job.spec.contractAddress)
      const aggregator = this.aggregators.get(address) ?? { address }
      this.aggregators.set(address, aggregator)
      return { job, aggregator, lastPollMs: 0, busy: false }
    })
  }

  async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.tick()
      } catch (error) {
        this.log.warn(
          { chainId: this.options.chainId, err: messageOf(error) },
          'flux monitor: tick failed; trying again',
        )
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.tickMs ?? 500))
    }
  }

  /** One look: the round logs since the last head (one read for every aggregator), then the timers. */
  private async tick(): Promise<void> {
    const provider = this.options.provider
    const head = await provider.getBlockNumber()
    const from = this.fromBlock
    const logs =
      from === undefined || head < from
        ? []
        : await provider.getLogs({
            address: [...this.aggregators.keys()],
            topics: [[FLUX_TOPICS.newRound]],
            fromBlock: from,
            toBlock: head,
          })
    this.fromBlock = head + 1
    const work = logs.flatMap((entry) => this.onNewRound(entry))
    const now = Date.now()
    for (const state of this.states) {
      const { job, aggregator } = state
      aggregator.lastStartedAt ??= (await readLatestRound(provider, aggregator.address)).startedAt
      if (
        job.idleTimerMs !== undefined &&
        heartbeatDue(now / 1000, aggregator.lastStartedAt, job.idleTimerMs)
      )
        work.push(this.act(state, 'idle'))
      else if (job.pollTimerMs !== undefined && now - state.lastPollMs >= job.pollTimerMs) {
        state.lastPollMs = now
        work.push(this.act(state, 'poll'))
      }
    }
    await Promise.all(work)
  }

  /** A round started: the heartbeat counts from it, and every job on its aggregator may answer it. */
  private onNewRound(entry: Log): Promise<void>[] {
    const parsed = fluxAggregatorInterface.parseLog(entry)
    const aggregator = this.aggregators.get(getAddress(entry.address))
    if (!parsed || !aggregator) return []
    const startedAt = Number(parsed.args.startedAt as bigint)
    aggregator.lastStartedAt = Math.max(aggregator.lastStartedAt ?? 0, startedAt)
    const logged = {
      roundId: Number(parsed.args.roundId as bigint),
      startedBy: String(parsed.args.startedBy),
    }
    return this.states
      .filter((state) => state.aggregator === aggregator)
      .map((state) => this.act(state, 'new-round', logged))
  }

  private async act(state: JobState, trigger: FluxTrigger, logged?: NewRoundSeen): Promise<void> {
    if (state.busy) return
    state.busy = true
    try {
      this.options.onDecision?.(await this.decide(state, trigger, logged))
    } catch (error) {
      const message = messageOf(error)
      this.log.warn(
        { job: state.job.spec.name, trigger, err: message },
        'flux monitor: could not act',
      )
      this.options.onDecision?.({
        job: state.job.spec.name,
        trigger,
        outcome: 'failed',
        error: message,
      })
    } finally {
      state.busy = false
    }
  }

  /** Chainlink's order: the round first (nothing fetched for a round this node may not answer), then the value. */
  private async decide(
    state: JobState,
    trigger: FluxTrigger,
    logged?: NewRoundSeen,
  ): Promise<FluxDecision> {
    const { job, aggregator } = state
    const { provider, sender } = this.options
    const contract = aggregator.address
    const oracles = (await this.call<string[]>(contract, 'getOracles')).map((a) => getAddress(a))
    const own = sender.addresses.map((a) => getAddress(a))
    const oracle = own.find((address) => oracles.includes(address)) ?? own[0]!
    const roundState = await readOracleRoundState(provider, contract, oracle, logged?.roundId)
    const key = `flux:${this.options.chainId}:${contract}:${oracle}:${roundState.roundId}`
    const round = checkRound({
      trigger,
      oracle,
      oracles,
      state: roundState,
      submitted: await sender.bound(key),
      startedBy: logged?.startedBy,
      minPayment: job.minPayment,
    })
    if (!round.submit) return this.skipped(state, trigger, round, roundState.roundId)
    aggregator.range ??= {
      min: await this.call<bigint>(contract, 'minSubmissionValue'),
      max: await this.call<bigint>(contract, 'maxSubmissionValue'),
    }
    const latest = await readLatestRound(provider, contract)
    const value = await this.options.observe(job, {
      latestAnswer: latest.answer.toString(),
      updatedAt: latest.updatedAt.toString(),
    })
    const submission = checkSubmission({
      trigger,
      roundId: round.roundId,
      latestSubmission: roundState.latestSubmission,
      answer: value,
      thresholds: job.thresholds,
      range: aggregator.range,
    })
    if (!submission.submit) return this.skipped(state, trigger, submission, round.roundId)
    return this.submit(state, trigger, round.roundId, value, key)
  }

  private async submit(
    state: JobState,
    trigger: FluxTrigger,
    roundId: number,
    value: bigint,
    key: string,
  ): Promise<FluxDecision> {
    const job = state.job
    state.lastSkip = undefined
    this.log.info(
      { job: job.spec.name, trigger, round: roundId, value: value.toString() },
      'flux monitor: submitting',
    )
    const result = await this.options.sender.submit({
      to: state.aggregator.address,
      data: fluxAggregatorInterface.encodeFunctionData('submit', [roundId, value]),
      gasLimit: job.spec.gasLimit,
      idempotencyKey: key,
    })
    if (result.status !== 'mined')
      this.log.warn(
        { job: job.spec.name, round: roundId, ...result },
        'flux monitor: not submitted',
      )
    return { job: job.spec.name, trigger, roundId, outcome: 'submitted', value, result }
  }

  /** A skip is said once while it lasts, not at every tick. */
  private skipped(
    state: JobState,
    trigger: FluxTrigger,
    skip: Skip,
    roundId: number,
  ): FluxDecision {
    const said = `${skip.code}:${roundId}`
    const quiet = skip.code === 'within_threshold' || skip.code === 'already_submitted'
    if (state.lastSkip !== said)
      this.log[quiet ? 'debug' : 'info'](
        { job: state.job.spec.name, trigger, round: roundId, code: skip.code },
        `flux monitor: ${skip.reason}`,
      )
    state.lastSkip = said
    return { job: state.job.spec.name, trigger, roundId, outcome: 'skipped', skip }
  }

  private async call<T>(contract: string, name: string): Promise<T> {
    const data = await this.options.provider.call({
      to: contract,
      data: fluxAggregatorInterface.encodeFunctionData(name, []),
    })
    return fluxAggregatorInterface.decodeFunctionResult(name, data)[0] as T
  }
}

interface NewRoundSeen {
  roundId: number
  startedBy: string
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
