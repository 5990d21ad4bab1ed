import { Decimal } from '../../../src/reduce/decimal.ts'
import { JsonRpcProvider, Wallet } from 'ethers'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addOracles, deployAggregator } from '../../../src/chain/flux/aggregator-admin.ts'
import { EndpointPool } from '../../../src/chain/endpoints/pool.ts'
import { headHeaderOf } from '../../../src/chain/head-header.ts'
import { PoolProvider } from '../../../src/chain/endpoints/pool-provider.ts'
import { createTxSender, type TxSender } from '../../../src/chain/sender/index.ts'
import { DependencyHealth } from '../../../src/config/dependency-health.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../../src/dev/anvil.ts'
import { waitFor } from '../../../src/dev/process.ts'
import { callsBetween, startRpcProxy, type RpcProxy } from '../../../src/dev/rpc-call-counter.ts'
import { loadJobSpec } from '../../../src/pipeline/job-spec/loader.ts'
import { fluxJobOf, isFluxJob, type FluxJob } from '../../../src/runner/flux/flux-job.ts'
import { startFluxMonitor, type FluxDecision } from '../../../src/runner/flux/monitor.ts'
import { testRedisUrl, uniquePrefix } from '../../support/redis.ts'
import { rpc } from '../../../chaos/rpc.ts'

// What the flux monitor of one chain asks its RPC node per block while its jobs poll and nothing is
// due (each poll fetches a value within the threshold): the head comes from the chain's one shared
// read (the endpoint pool's, which the listener reads or, here, is notified of over WebSocket), the
// logs of every aggregator come in one eth_getLogs a block, and a poll asks the aggregator nothing:
// what it would read (the oracles, the round state, the latest round) is kept from the last read
// until a log of the aggregator says it changed. None of it grows with the number of flux jobs.
// Counted by a JSON-RPC proxy in front of anvil mining a block a second.

const NODE_KEY = ANVIL_PRIVATE_KEYS[1]
const NODE = new Wallet(NODE_KEY).address
const JOBS = 8
const MEASURED_BLOCKS = 6

describe('the flux monitor reads per block, whatever the number of flux jobs', () => {
  let anvil: Anvil
  let counter: RpcProxy
  let direct: JsonRpcProvider
  let sender: TxSender
  const aggregators: string[] = []

  beforeAll(async () => {
    anvil = await startAnvil()
    counter = await startRpcProxy(anvil)
    direct = new JsonRpcProvider(anvil.rpcUrl, anvil.chainId, {
      staticNetwork: true,
      cacheTimeout: -1,
    })
    const owner = new Wallet(ANVIL_PRIVATE_KEYS[0], direct)
    for (let made = 0; made < JOBS; made++) {
      const { aggregator } = await deployAggregator(owner, {
        paymentAmount: 10n ** 16n,
        timeout: 600,
        decimals: 0,
        description: `feed ${made}`,
        fund: 10n ** 19n,
      })
      await addOracles(owner, aggregator, [NODE], { minSubmissions: 1 })
      aggregators.push(aggregator)
    }
    // Deployed on automine; from now on a block a second, as a chain keeps its pace.
    await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1])
    sender = createTxSender({
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      keys: [NODE_KEY],
      redisUrl: testRedisUrl(),
      prefix: uniquePrefix('flux-rpc'),
      pollIntervalMs: 200,
    })
    await sender.start()
  }, 180_000)

  afterAll(async () => {
    await sender?.close()
    direct?.destroy()
    await counter?.stop()
    await anvil?.stop()
  })

  function jobsOn(addresses: readonly string[]): FluxJob[] {
    return addresses.map((aggregator, index) => {
      const { job, problems } = loadJobSpec(
        `type = "fluxmonitor"
schemaVersion = 1
name = "feed ${index}"
contractAddress = "${aggregator}"
threshold = 0.5
idleTimerPeriod = "1h"
pollTimerPeriod = "1s"
maxTaskDuration = "500ms"
observationSource = """
    answer [type="sum" values="[1000]"]
"""
`,
        `feed-${index}.toml`,
      )
      expect(problems).toEqual([])
      if (!job || !isFluxJob(job)) throw new Error('not a flux job')
      return fluxJobOf(job)
    })
  }

  /** The chain's endpoint pool, on the counting proxy, as a runner has it. */
  function poolOnProxy(): EndpointPool {
    return new EndpointPool({
      chainId: anvil.chainId,
      label: `chain ${anvil.chainId}`,
      endpoints: [{ url: counter.httpUrl, sendOnly: false, setting: 'RPC_URL' }],
      healthOf: (endpoint) =>
        new DependencyHealth({
          dependency: 'the RPC endpoint',
          setting: endpoint.setting,
          url: endpoint.url,
          log: { warn: () => undefined, info: () => undefined },
          reportEveryMs: 60_000,
        }),
      // The listener's heads are notified (WebSocket): the pool reads none of its own meanwhile.
      pollIntervalMs: 60_000,
      probeIntervalMs: 60_000,
    })
  }

  /** Resolves once each of `jobs` decided `polls` times, after `from`, that a poll was within the threshold. */
  function polledIdle(decisions: FluxDecision[], from: number, jobs: number, polls = 1) {
    return waitFor(
      `${polls} poll(s) of every job within the threshold`,
      async () => {
        const byJob = new Map<string, number>()
        for (const d of decisions.slice(from))
          if (d.outcome === 'skipped' && d.skip.code === 'within_threshold')
            byJob.set(d.job, (byJob.get(d.job) ?? 0) + 1)
        return byJob.size === jobs && [...byJob.values()].every((count) => count >= polls)
      },
      30_000,
    )
  }

  /**
   * The monitor's calls by method over MEASURED_BLOCKS blocks, once its jobs submitted their first
   * round; then, with `reorg`, its calls from a reorg of the last block until each job polled again.
   */
  async function callsPerBlock(addresses: readonly string[], reorg = false) {
    const pool = poolOnProxy()
    await pool.start()
    const heads = await notifyHeads(pool)
    const provider = new PoolProvider(pool, 60_000)
    const decisions: FluxDecision[] = []
    const monitor = startFluxMonitor({
      chainId: anvil.chainId,
      provider,
      sender,
      jobs: jobsOn(addresses),
      observe: async () => new Decimal(1000),
      log: pino({ level: 'silent' }),
      onDecision: (decision) => decisions.push(decision),
    })
    try {
      // Every aggregator's first round (the heartbeat of one that never answered) is behind it, as
      // the monitor saw it from the round logs.
      await waitFor(
        'every feed answered round 1',
        async () =>
          monitor.feeds().length === addresses.length &&
          monitor.feeds().every((feed) => feed.roundId === '1'),
        60_000,
      )
      // And every job polled since and found nothing to do: the reads a round's logs called for
      // (the round state, the latest round, once an aggregator) are behind it too.
      await polledIdle(decisions, decisions.length, addresses.length)
      const head = async () => Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber', []))
      const start = (await head()) + 1
      await waitFor('the next block', async () => (await head()) >= start, 10_000)
      const before = counter.snapshot()
      const decided = decisions.length
      await waitFor(
        'the measured blocks',
        async () => (await head()) >= start + MEASURED_BLOCKS,
        30_000,
      )
      const blocks = (await head()) - start
      const calls = callsBetween(before, counter.snapshot())
      const polls = decisions
        .slice(decided)
        .filter((d) => d.trigger === 'poll' && d.outcome === 'skipped')
      if (!reorg) return { blocks, calls, polls }
      // Replaced from a head the monitor has looked at: one the pool was told, then two polls of
      // each job (the second is of a look that began after the first, so after that head).
      const seen = headHeaderOf(await pool.latestHeader())!.number
      await polledIdle(decisions, decisions.length, addresses.length, 2)
      const beforeReorg = counter.snapshot()
      await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [0])
      await rpc(anvil.rpcUrl, 'anvil_reorg', [(await head()) - seen + 1, []])
      await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [1])
      const replaced = await head()
      // The monitor learns of it from the next head (its parent, or the block at the height it
      // saw, is not the head it saw); again two polls of each job after the pool was told it.
      await waitFor(
        'the head after the reorg, told to the pool',
        async () => headHeaderOf(await pool.latestHeader())!.number > replaced,
        10_000,
      )
      await polledIdle(decisions, decisions.length, addresses.length, 2)
      return { blocks, calls, polls, reorgCalls: callsBetween(beforeReorg, counter.snapshot()) }
    } finally {
      await monitor.stop()
      heads.close()
      provider.destroy()
      await pool.close()
    }
  }

  /**
   * A WebSocket listener's part: every new head anvil announces, told to the pool as the runner's
   * listener tells it (straight from anvil, so the proxy counts the monitor's calls alone).
   */
  async function notifyHeads(pool: EndpointPool): Promise<WebSocket> {
    const socket = new WebSocket(anvil.wsUrl)
    await new Promise((opened) => socket.addEventListener('open', opened, { once: true }))
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { params?: { result?: unknown } }
      if (message.params?.result) pool.noteLatestBlock(message.params.result)
    })
    socket.send(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }),
    )
    return socket
  }

  it('asks one call a block while its jobs poll, with one job as with eight', async () => {
    const one = await callsPerBlock(aggregators.slice(0, 1))
    const all = await callsPerBlock(aggregators)
    for (const [jobs, { blocks, calls, polls }] of [
      [1, one],
      [JOBS, all],
    ] as const) {
      const said = `${jobs} jobs, ${blocks} blocks: ${JSON.stringify(calls)}, ${polls.length} polls`
      // The polls ran (about one a second a job) and found the value within the threshold.
      expect(polls.length, said).toBeGreaterThanOrEqual(jobs * (blocks - 2))
      expect(new Set(polls.map((d) => d.outcome === 'skipped' && d.skip.code)), said).toEqual(
        new Set(['within_threshold']),
      )
      const {
        eth_getLogs: logs = 0,
        // The one read a look makes when heads came faster than it looked (is the last head it saw
        // still the chain's?): instead of a log read, as that look reads two blocks' logs at once.
        eth_getBlockByNumber: ancestry = 0,
        ...others
      } = calls
      // The head is the pool's, told by the listener: no eth_blockNumber of the monitor's; and no
      // eth_call: a poll asks the aggregator nothing while no log says it changed. A block's look
      // may straddle the window's edges: a call of slack.
      expect(others, said).toEqual({})
      expect(logs + ancestry, said).toBeLessThanOrEqual(blocks + 1)
    }
  }, 240_000)

  it('asks again what it kept of every aggregator after a reorg', async () => {
    // The last block replaced: the monitor cannot tell what the replaced block held, so what it
    // kept from its reads is dropped and each job's next poll reads its round state again.
    const { reorgCalls } = await callsPerBlock(aggregators, true)
    expect(reorgCalls?.eth_call ?? 0, JSON.stringify(reorgCalls)).toBeGreaterThanOrEqual(JOBS)
  }, 240_000)
})
