import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { JsonRpcProvider, Wallet } from 'ethers'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  FLUX_TOPICS,
  fluxAggregatorInterface,
  readLatestRound,
} from '../../../src/chain/flux/aggregator.ts'
import { addOracles, deployAggregator } from '../../../src/chain/flux/aggregator-admin.ts'
import { createTxSender, type TxSender } from '../../../src/chain/sender/index.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../../src/dev/anvil.ts'
import { loadJobSpec } from '../../../src/pipeline/job-spec/loader.ts'
import { fluxJobOf, isFluxJob } from '../../../src/runner/flux/flux-job.ts'
import { startFluxMonitor, type FluxDecision } from '../../../src/runner/flux/monitor.ts'
import { observeFluxValue } from '../../../src/runner/flux/observe.ts'
import { testRedisUrl, uniquePrefix } from '../../support/redis.ts'
import { rpc } from '../../../chaos/rpc.ts'

// The flux monitor on anvil and Redis, with Chainlink's FluxAggregator, the node's own sender and a
// real HTTP source whose value the test moves: a value moved past the threshold is submitted, one
// within it is not, and with the value still the heartbeat rounds arrive. Every outcome is read
// from the chain.

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address
/** An oracle that never submits. */
const SILENT = new Wallet(ANVIL_PRIVATE_KEYS[2]).address

/** Waits for a condition, polling; the bound only catches a hang. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, boundMs = 60_000) {
  const deadline = Date.now() + boundMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${boundMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const spec = (aggregator: string, url: string, fields: string) => `
type = "fluxmonitor"
schemaVersion = 1
name = "floor price"
contractAddress = "${aggregator}"
${fields}
observationSource = """
    fetch [type="http" method=GET url="${url}" timeout="1s"]
    parse [type="jsonparse" path="data,result"]
    fetch -> parse
"""
`

describe('the flux monitor on anvil and Redis', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  let sender: TxSender
  let server: Server
  let value = 1000
  let sourceDown = false
  let url = ''

  beforeAll(async () => {
    anvil = await startAnvil()
    provider = new JsonRpcProvider(anvil.rpcUrl, anvil.chainId, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 100,
    })
    server = createServer((_, response) => {
      response.setHeader('content-type', 'application/json')
      if (sourceDown) response.statusCode = 503
      response.end(JSON.stringify(sourceDown ? { error: 'down' } : { data: { result: value } }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/floor`
    sender = createTxSender({
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('flux'),
      pollIntervalMs: 50,
    })
    await sender.start()
  }, 120_000)
  afterAll(async () => {
    await sender?.close()
    server?.close()
    provider?.destroy()
    await anvil?.stop()
  })

  async function aggregatorWithNode(): Promise<string> {
    const owner = new Wallet(ANVIL_PRIVATE_KEYS[0], provider)
    const { aggregator } = await deployAggregator(owner, {
      paymentAmount: 10n ** 16n,
      timeout: 600,
      decimals: 0,
      description: 'floor price',
      fund: 10n ** 19n,
    })
    await addOracles(owner, aggregator, [NODE], { minSubmissions: 1 })
    return aggregator
  }

  function monitor(
    aggregator: string,
    fields: string,
    decisions: FluxDecision[],
    log = pino({ level: 'silent' }),
  ) {
    const { job, problems } = loadJobSpec(spec(aggregator, url, fields), 'flux.toml')
    expect(problems).toEqual([])
    if (!job || !isFluxJob(job)) throw new Error('not a flux job')
    return startFluxMonitor({
      chainId: anvil.chainId,
      provider,
      sender,
      jobs: [fluxJobOf(job)],
      observe: (fluxJob, meta) => observeFluxValue(fluxJob, meta),
      log,
      tickMs: 200,
      onDecision: (decision) => decisions.push(decision),
    })
  }

  /** Until the aggregator's latest round is `round` or later. */
  function untilRound(aggregator: string, round: bigint, what = `round ${round} answered`) {
    return until(what, async () =>
      (await readLatestRound(provider, aggregator)).roundId >= round ? true : undefined,
    )
  }

  /** Each round's answer and start (block time, seconds), rounds 1 to `last`, from getRoundData. */
  async function rounds(aggregator: string, last: number) {
    const contract = fluxAggregatorInterface
    const read: Array<{ answer: bigint; startedAt: number }> = []
    for (let round = 1; round <= last; round++) {
      const data = await provider.call({
        to: aggregator,
        data: contract.encodeFunctionData('getRoundData', [round]),
      })
      const [, answer, startedAt] = contract.decodeFunctionResult('getRoundData', data)
      read.push({ answer: answer as bigint, startedAt: Number(startedAt) })
    }
    return read
  }

  /** Submissions per (round, oracle), from the aggregator's SubmissionReceived logs. */
  async function submissions(aggregator: string): Promise<Map<string, number>> {
    const logs = await provider.getLogs({
      address: aggregator,
      topics: [FLUX_TOPICS.submissionReceived],
      fromBlock: 0,
    })
    const counts = new Map<string, number>()
    for (const entry of logs) {
      const parsed = fluxAggregatorInterface.parseLog(entry)!
      const key = `${parsed.args.round}:${parsed.args.oracle}`
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
    return counts
  }

  it('submits the first round, not a value within the threshold, and a value moved past it', async () => {
    const aggregator = await aggregatorWithNode()
    const decisions: FluxDecision[] = []
    value = 1000
    const running = monitor(
      aggregator,
      'threshold = 0.5\nidleTimerPeriod = "1h"\npollTimerPeriod = "1s"',
      decisions,
    )
    try {
      const first = await until('round 1 answered', async () => {
        const latest = await readLatestRound(provider, aggregator)
        return latest.roundId === 1n ? latest : undefined
      })
      expect(first.answer).toBe(1000n)

      // 0.45 % off as the decimal a node compares, within 0.5 %; the 995 it would be submitted as
      // is 0.5 % off, past it.
      value = 995.5
      const seen = decisions.length
      await until('two polls within the threshold', async () =>
        decisions
          .slice(seen)
          .filter((d) => d.outcome === 'skipped' && d.skip.code === 'within_threshold').length >= 2
          ? true
          : undefined,
      )
      expect((await readLatestRound(provider, aggregator)).roundId).toBe(1n)

      // Submitted without what is after the point, toward zero.
      value = 1100.7
      const moved = await until('round 2 answered', async () => {
        const latest = await readLatestRound(provider, aggregator)
        return latest.roundId === 2n ? latest : undefined
      })
      expect(moved.answer).toBe(1100n)
    } finally {
      await running.stop()
    }
    const counts = await submissions(aggregator)
    expect([...counts.keys()].sort()).toEqual([`1:${NODE}`, `2:${NODE}`])
    expect([...counts.values()].every((count) => count === 1)).toBe(true)
  }, 120_000)

  it('with the value still, the heartbeat rounds arrive, each the idle period after the last', async () => {
    const aggregator = await aggregatorWithNode()
    const decisions: FluxDecision[] = []
    value = 2000
    const running = monitor(
      aggregator,
      'threshold = 50.0\nidleTimerPeriod = "3s"\npollTimerPeriod = "1s"',
      decisions,
    )
    try {
      await untilRound(aggregator, 4n)
    } finally {
      await running.stop()
    }
    const read = await rounds(aggregator, 4)
    expect(read.map((round) => round.answer)).toEqual([2000n, 2000n, 2000n, 2000n])
    const starts = read.map((round) => round.startedAt)
    for (let i = 1; i < starts.length; i++) {
      const gap = starts[i]! - starts[i - 1]!
      expect(gap, `round ${i + 1} started ${gap} s after round ${i}`).toBeGreaterThanOrEqual(3)
      expect(gap, `round ${i + 1} started ${gap} s after round ${i}`).toBeLessThanOrEqual(6)
    }
    const idle = decisions.filter((d) => d.outcome === 'submitted' && d.trigger === 'idle')
    expect(idle.length).toBeGreaterThanOrEqual(3)
    const counts = await submissions(aggregator)
    expect([...counts.values()].every((count) => count === 1)).toBe(true)
  }, 120_000)

  it('with the drumbeat on (no heartbeat, no poll), rounds start on its schedule, the value as it is', async () => {
    const aggregator = await aggregatorWithNode()
    const decisions: FluxDecision[] = []
    value = 4000
    const running = monitor(
      aggregator,
      [
        'idleTimerDisabled = true',
        'pollTimerDisabled = true',
        'drumbeatEnabled = true',
        'drumbeatSchedule = "@every 2s"',
        'drumbeatRandomDelay = "300ms"',
      ].join('\n'),
      decisions,
    )
    try {
      await untilRound(aggregator, 3n)
      // The third round is on the chain once its transaction is mined; the monitor decides
      // `submitted` when the sender has watched it, a moment later.
      await until('three submissions decided', async () =>
        decisions.filter((d) => d.outcome === 'submitted').length >= 3 ? true : undefined,
      )
      // `feedrunner status` shows when the next beat is due, on the chain's clock.
      const [feed] = running.feeds()
      const head = (await provider.getBlock('latest'))!.timestamp
      expect(feed?.nextDrumbeatAt).toBeGreaterThan(head - 2)
      expect(feed?.nextHeartbeatAt).toBeUndefined()
    } finally {
      await running.stop()
    }
    const read = await rounds(aggregator, 3)
    expect(read.map((round) => round.answer)).toEqual([4000n, 4000n, 4000n])
    const starts = read.map((round) => round.startedAt)
    // Two beats are 2 s apart on the chain's clock; its blocks are stamped in whole seconds.
    for (let i = 1; i < starts.length; i++)
      expect(starts[i]! - starts[i - 1]!, `round ${i + 1} after round ${i}`).toBeGreaterThanOrEqual(
        1,
      )
    const submitted = decisions.filter((d) => d.outcome === 'submitted')
    expect(submitted.length).toBeGreaterThanOrEqual(3)
    expect(submitted.every((d) => d.trigger === 'drumbeat')).toBe(true)
    const counts = await submissions(aggregator)
    expect([...counts.values()].every((count) => count === 1)).toBe(true)
  }, 120_000)

  it('a heartbeat whose source is down is tried again after a wait, said once, and again once it is back', async () => {
    const aggregator = await aggregatorWithNode()
    // Each decision with the moment it was told (this process's monotonic clock).
    const decidedAt: number[] = []
    const decisions = new (class extends Array<FluxDecision> {
      override push(...items: FluxDecision[]): number {
        decidedAt.push(performance.now())
        return super.push(...items)
      }
    })()
    const failedAt: number[] = []
    const lines: Array<{ level: number; msg: string }> = []
    const log = pino(
      { level: 'debug' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    )
    value = 5000
    sourceDown = true
    const running = monitor(
      aggregator,
      'idleTimerPeriod = "2s"\npollTimerDisabled = true',
      decisions,
      log,
    )
    try {
      await until('three failed heartbeats', async () => {
        failedAt.splice(0, failedAt.length)
        for (const [at, d] of decisions.entries())
          if (d.outcome === 'failed') failedAt.push(decidedAt[at]!)
        return failedAt.length >= 3 ? true : undefined
      })
      sourceDown = false
      await untilRound(aggregator, 1n, 'round 1 answered once the source is back')
    } finally {
      sourceDown = false
      await running.stop()
    }
    // Tried again after the retry's wait (the idle period, 2 s, being under a minute), not at each
    // look (every 200 ms here): a floor on the gaps, which a slow machine only widens.
    for (let i = 1; i < 3; i++)
      expect(failedAt[i]! - failedAt[i - 1]!, `failure ${i + 1} after ${i}`).toBeGreaterThan(1_900)
    const warned = lines.filter((line) => line.msg.startsWith('flux monitor: could not act'))
    expect(warned).toHaveLength(1)
    expect(lines.some((line) => line.msg.startsWith('flux monitor: acting again after'))).toBe(true)
    expect(lines.filter((line) => line.level >= 40)).toHaveLength(1)
  }, 120_000)

  it('a round left open is superseded once it times out, though no log says so', async () => {
    // Both oracles are needed to answer a round, and one never submits: the node's submission
    // leaves round 1 open, and the aggregator lets the node start round 2 only once round 1 has
    // timed out. Nothing is logged then: the round state the monitor keeps must give way to the
    // chain's clock, not wait for a log.
    const owner = new Wallet(ANVIL_PRIVATE_KEYS[0], provider)
    const timeout = 4
    const { aggregator } = await deployAggregator(owner, {
      paymentAmount: 10n ** 16n,
      timeout,
      decimals: 0,
      description: 'floor price',
      fund: 10n ** 19n,
    })
    await addOracles(owner, aggregator, [NODE, SILENT], { minSubmissions: 2 })
    const decisions: FluxDecision[] = []
    value = 3000
    const running = monitor(
      aggregator,
      'threshold = 0.5\nidleTimerPeriod = "1h"\npollTimerPeriod = "1s"',
      decisions,
    )
    // A block a second meanwhile, as a chain keeps its pace: its clock passes the timeout.
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1])
    try {
      await until('the node submitted to round 1', async () =>
        (await submissions(aggregator)).has(`1:${NODE}`) ? true : undefined,
      )
      value = 3300
      // The monitor's own word that its submission to round 2 ended (the sender saw it mined), not
      // only the chain's: stopped before, its wait would be cut and the decision read as failed.
      await until('the monitor to say its submission to round 2 was mined', async () =>
        decisions.some(
          (d) => d.outcome === 'submitted' && d.roundId === 2 && d.result.status === 'mined',
        )
          ? true
          : undefined,
      )
    } finally {
      await running.stop()
      await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0])
    }
    const started = await provider.getLogs({
      address: aggregator,
      topics: [FLUX_TOPICS.newRound],
      fromBlock: 0,
    })
    const startedAt = started.map((entry) =>
      Number(fluxAggregatorInterface.parseLog(entry)!.args.startedAt as bigint),
    )
    expect(startedAt).toHaveLength(2)
    expect(startedAt[1]! - startedAt[0]!).toBeGreaterThan(timeout)
    const counts = await submissions(aggregator)
    expect([...counts.keys()].sort()).toEqual([`1:${NODE}`, `2:${NODE}`])
    expect([...counts.values()].every((count) => count === 1)).toBe(true)
    expect(decisions.filter((d) => d.outcome === 'failed')).toEqual([])
  }, 120_000)
})
