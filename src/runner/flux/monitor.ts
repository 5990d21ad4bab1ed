import { setTimeout as delay } from 'node:timers/promises'
import { getAddress, type Log } from 'ethers'
import type { Logger } from '../../config/logger.ts'
import {
  fluxAggregatorInterface,
  readLatestRound,
  readOracleRoundState,
} from '../../chain/flux/aggregator.ts'
import { FeedrunnerError } from '../../config/errors.ts'
import { toBigInt } from '../../reduce/decimal.ts'
import {
  checkRound,
  chooseOracle,
  checkSubmission,
  nextHeartbeatAt,
  type FluxTrigger,
  type Skip,
} from './decision.ts'
import { AggregatorReads, type ReadAt } from './aggregator-reads.ts'
import { extendsHead, latestHead, type Head } from './chain-head.ts'
import type { FluxJob } from './flux-job.ts'
import { FailureStreak } from './failure-streak.ts'
import { FluxJobLog, LOOKS_SAID } from './job-log.ts'
import { afterAct, drumbeatPause, dueTrigger, type JobTimers } from './timers.ts'
import type { FluxDecision, FluxFeed, FluxMonitor, FluxMonitorOptions } from './monitor-types.ts'

export type { FluxDecision, FluxFeed, FluxMonitor, FluxMonitorOptions } from './monitor-types.ts'

interface Aggregator {
  address: string
  /** Its oracle list, latest round and oracles' round states, as read and kept until a log. */
  reads: AggregatorReads
  /** Unix seconds: when the latest round started (the heartbeat counts from it). */
  lastStartedAt?: number
  /** The latest answer: read at the first look, then from the AnswerUpdated logs of each look. */
  latest?: { roundId: bigint; answer: bigint; updatedAt: number }
}

interface JobState {
  job: FluxJob
  aggregator: Aggregator
  timers: JobTimers
  busy: boolean
  said: FluxJobLog
}

/**
 * The flux monitor of one chain: every fluxmonitor job on it, driven by one loop. Each tick reads the
 * head and, when it moved, the NewRound and AnswerUpdated logs of every aggregator in one eth_getLogs
 * (never a subscription per job); then each job acts on what is due: a round another oracle
 * started, the drumbeat, the heartbeat, or its poll (timers.ts). What it submits goes through the
 * node's sender, which simulates it before it signs and sends one transaction per (aggregator,
 * oracle, round) across every process of the node, whichever asked first.
 */
export function startFluxMonitor(options: FluxMonitorOptions): FluxMonitor {
  const monitor = new ChainFluxMonitor(options)
  const loop = monitor.run()
  return {
    setJobs: (jobs) => monitor.setJobs(jobs),
    feeds: () => monitor.feeds(),
    async stop() {
      monitor.stop()
      const bound = options.stopTimeoutMs ?? 5_000
      const ended = await Promise.race([loop.then(() => true), delay(bound, false, { ref: false })])
      if (!ended)
        options.log.warn(
          { chainId: options.chainId, waitedMs: bound },
          'flux monitor: a look at the chain did not end in time; let go',
        )
    },
  }
}

class ChainFluxMonitor {
  private readonly stopping = new AbortController()
  private aggregators = new Map<string, Aggregator>()
  private states: JobState[] = []
  private fromBlock: number | undefined
  /** The last head whose logs were read, the block every kept read is of, and the chain's time then. */
  private looked: (Head & { now: number }) | undefined
  /** The chain's clock: the head's time when it was first seen, run on from there on this process's monotonic clock. */
  private chainClock: { head: number; timestamp: number; seenAt: number } | undefined
  private readonly log: Logger
  /** The looks at the chain that fail in a row (job-log.ts says what they say). */
  private readonly looks: FailureStreak

  constructor(private readonly options: FluxMonitorOptions) {
    this.log = options.log
    this.looks = new FailureStreak(this.log, { chainId: options.chainId }, LOOKS_SAID, options.now)
    this.setJobs(options.jobs)
  }

  /** Swaps the jobs in: a job loaded again keeps its timers, an aggregator kept what was read of it. */
  setJobs(jobs: readonly FluxJob[]): void {
    const before = new Map(this.states.map((state) => [state.job.spec.externalJobID, state]))
    const aggregators = new Map<string, Aggregator>()
    this.states = jobs.map((job): JobState => {
      const address = getAddress(job.spec.contractAddress)
      const aggregator = aggregators.get(address) ??
        this.aggregators.get(address) ?? {
          address,
          reads: new AggregatorReads(this.options.provider, address),
        }
      aggregators.set(address, aggregator)
      const was = before.get(job.spec.externalJobID)
      // The same state, so a look in progress for the job still counts as its one at a time.
      if (was) return Object.assign(was, { job, aggregator })
      return {
        job,
        aggregator,
        timers: { lastPollMs: 0 },
        busy: false,
        said: new FluxJobLog(this.log, job.spec.name, this.options.now),
      }
    })
    this.aggregators = aggregators
  }

  feeds(): FluxFeed[] {
    if (this.fromBlock === undefined) return []
    return this.states.map(({ job, aggregator, timers }) => ({
      job: job.spec.name,
      aggregator: aggregator.address,
      roundId: aggregator.latest?.roundId.toString(),
      answer: aggregator.latest?.answer.toString(),
      updatedAt: aggregator.latest?.updatedAt,
      nextHeartbeatAt:
        job.idleTimerMs === undefined || aggregator.lastStartedAt === undefined
          ? undefined
          : nextHeartbeatAt(aggregator.lastStartedAt, job.idleTimerMs),
      nextDrumbeatAt: timers.drumbeat && Math.ceil(timers.drumbeat.nextMs / 1000),
    }))
  }

  stop(): void {
    this.stopping.abort(
      new FeedrunnerError('the flux monitor is stopping', { kind: 'unavailable' }),
    )
  }

  async run(): Promise<void> {
    const signal = this.stopping.signal
    while (!signal.aborted) {
      try {
        await this.tick()
        this.looks.succeeded()
      } catch (error) {
        if (!signal.aborted) this.looks.failed({ err: messageOf(error) })
      }
      await delay(this.options.tickMs ?? 500, undefined, { signal }).catch(() => undefined)
    }
  }

  /**
   * One look: every log of every aggregator since the last head (one read for them all), then the
   * timers. Nothing is read while there is no flux job, or while this process owns none of the
   * node's keys (another process of the node submits; this one takes over with the key); what was
   * read of the aggregators before is dropped then, as the logs that would say it changed are not
   * read, and when the head does not extend the last one (a reorg).
   */
  private async tick(): Promise<void> {
    const provider = this.options.provider
    if (this.states.length === 0 || this.options.sender.ownership().available === 0) {
      if (this.fromBlock !== undefined) this.forgetReads()
      this.fromBlock = undefined
      return
    }
    const latest = await latestHead(provider)
    const head = latest.number
    const chainNow = this.chainNow(latest)
    if (this.looked && !(await extendsHead(provider, this.looked, latest))) this.forgetReads()
    const from = this.fromBlock
    const logs =
      from === undefined || head < from
        ? []
        : await provider.getLogs({
            address: [...this.aggregators.keys()],
            fromBlock: from,
            toBlock: head,
          })
    this.fromBlock = head + 1
    this.looked = { ...latest, now: chainNow }
    const work = logs.flatMap((entry) => this.onLog(entry))
    const now = Date.now()
    for (const state of [...this.states]) {
      if (this.stopping.signal.aborted) break
      const { job, aggregator } = state
      if (aggregator.lastStartedAt === undefined) {
        const latest = await readLatestRound(provider, aggregator.address, head)
        aggregator.lastStartedAt = latest.startedAt
        aggregator.latest ??= latest
        aggregator.reads.noteLatest(latest)
      }
      // A job busy with a round is looked at again at the next look, its timers as they were.
      if (state.busy) continue
      const clocks = { chainNow, lastStartedAt: aggregator.lastStartedAt, nowMs: now }
      const trigger = dueTrigger(job, state.timers, clocks)
      if (trigger) work.push(this.act(state, trigger))
    }
    await Promise.all(work)
  }

  /**
   * Now on the chain's clock (unix seconds), which the heartbeat counts by, as the round's start it
   * counts from is the chain's: the head's time, run on by the monotonic clock since this process
   * first saw that head (a chain that mines only when sent a transaction has an old head). Neither a
   * host clock set wrong nor a chain whose clock jumped holds the heartbeat back or brings it early.
   */
  private chainNow(latest: { number: number; timestamp: number }): number {
    const seen = this.chainClock
    if (seen?.head !== latest.number || seen.timestamp !== latest.timestamp)
      this.chainClock = {
        head: latest.number,
        timestamp: latest.timestamp,
        seenAt: performance.now(),
      }
    const clock = this.chainClock!
    return clock.timestamp + (performance.now() - clock.seenAt) / 1000
  }

  /**
   * Any log: what was read of the aggregator may have changed. A round answered: the feed's latest
   * answer. A round started: the heartbeat counts from it, and every job on its aggregator may
   * answer it.
   */
  private onLog(entry: Log): Promise<void>[] {
    const aggregator = this.aggregators.get(getAddress(entry.address))
    aggregator?.reads.onLog(entry.topics[0])
    const parsed = fluxAggregatorInterface.parseLog(entry)
    if (!parsed || !aggregator) return []
    if (parsed.name === 'AnswerUpdated') {
      const roundId = parsed.args.roundId as bigint
      if (roundId >= (aggregator.latest?.roundId ?? 0n))
        aggregator.latest = {
          roundId,
          answer: parsed.args.current as bigint,
          updatedAt: Number(parsed.args.updatedAt as bigint),
        }
      return []
    }
    if (parsed.name !== 'NewRound') return []
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

  private forgetReads(): void {
    for (const aggregator of this.aggregators.values()) aggregator.reads.forget()
    this.looked = undefined
  }

  private async act(state: JobState, trigger: FluxTrigger, logged?: NewRoundSeen): Promise<void> {
    if (state.busy || this.stopping.signal.aborted) return
    state.busy = true
    try {
      // Decided first: an optional call's arguments are not evaluated when there is no one to call.
      const decision = await this.decide(state, trigger, logged)
      afterAct(state.job, state.timers, { trigger, ok: true }, Date.now())
      this.options.onDecision?.(decision)
    } catch (error) {
      const message = messageOf(error)
      // Stopped under it: the wait ended, not the work (a sent submission is watched by the sender).
      if (this.stopping.signal.aborted)
        this.log.debug({ job: state.job.spec.name, trigger, err: message }, 'flux monitor: stopped')
      else state.said.failed(trigger, message)
      afterAct(state.job, state.timers, { trigger, ok: false }, Date.now())
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

  /**
   * Chainlink's order: the round first (nothing fetched for a round this node may not answer), then
   * the value. The aggregator's answers are those kept since its last log (aggregator-reads.ts),
   * read as of the last head looked at; a round a NewRound log names is read afresh.
   */
  private async decide(
    state: JobState,
    trigger: FluxTrigger,
    logged?: NewRoundSeen,
  ): Promise<FluxDecision> {
    const { job, aggregator } = state
    const { provider, sender } = this.options
    const { reads, address: contract } = aggregator
    const looked = this.looked
    if (!looked) throw new FeedrunnerError('no head looked at yet', { kind: 'unavailable' })
    const at: ReadAt = { block: looked.number, timestamp: looked.timestamp }
    const oracles = await reads.getOracles(at)
    const owned = sender.stats().flatMap((key) => (key.owned ? [key.address] : []))
    const chosen = chooseOracle({ own: sender.addresses, owned, oracles })
    if (!chosen.submit) return this.skipped(state, trigger, chosen, logged?.roundId ?? 0)
    const oracle = getAddress(chosen.oracle)
    let roundState = logged
      ? await readOracleRoundState(provider, contract, oracle, logged.roundId)
      : await reads.roundState(oracle, at, looked.now)
    if (trigger === 'drumbeat' && (await drumbeatPause(job, this.stopping.signal)))
      roundState = await readOracleRoundState(provider, contract, oracle, roundState.roundId)
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
    const range = await reads.range()
    const latest = await reads.latestRound(at)
    const value = await this.options.observe(
      job,
      { latestAnswer: latest.answer.toString(), updatedAt: latest.updatedAt.toString() },
      this.stopping.signal,
    )
    const submission = checkSubmission({
      trigger,
      roundId: round.roundId,
      latestSubmission: roundState.latestSubmission,
      answer: value,
      thresholds: job.thresholds,
      range,
    })
    if (!submission.submit) return this.skipped(state, trigger, submission, round.roundId)
    return this.submit(state, trigger, round.roundId, toBigInt(value, 'trunc'), { key, oracle })
  }

  /** Sent as the oracle itself, under the round's idempotency key. */
  private async submit(
    state: JobState,
    trigger: FluxTrigger,
    roundId: number,
    value: bigint,
    as: { key: string; oracle: string },
  ): Promise<FluxDecision> {
    const job = state.job
    // Whatever comes of it, the round state kept for this oracle is read again at its next look.
    state.aggregator.reads.forgetRoundState(as.oracle)
    state.said.submitting(trigger, roundId, value)
    const result = await this.options.sender.submit({
      to: state.aggregator.address,
      data: fluxAggregatorInterface.encodeFunctionData('submit', [roundId, value]),
      gasLimit: job.spec.gasLimit,
      idempotencyKey: as.key,
      from: as.oracle,
      // A stop ends the wait, not the submission: once sent, the sender watches it to its end.
      signal: this.stopping.signal,
    })
    if (result.status !== 'mined')
      this.log.warn(
        { job: job.spec.name, round: roundId, ...result },
        'flux monitor: not submitted',
      )
    return { job: job.spec.name, trigger, roundId, outcome: 'submitted', value, result }
  }

  /** A skip is said once while it lasts, not at every tick (job-log.ts). */
  private skipped(
    state: JobState,
    trigger: FluxTrigger,
    skip: Skip,
    roundId: number,
  ): FluxDecision {
    state.said.skipped(trigger, skip, roundId)
    return { job: state.job.spec.name, trigger, roundId, outcome: 'skipped', skip }
  }
}

interface NewRoundSeen {
  roundId: number
  startedBy: string
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
