import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Decimal } from '../../../src/reduce/decimal.ts'
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
import { waitFor } from '../../../src/dev/process.ts'
import { loadJobSpec } from '../../../src/pipeline/job-spec/loader.ts'
import { fluxJobOf, isFluxJob } from '../../../src/runner/flux/flux-job.ts'
import { startFluxMonitor, type FluxMonitor } from '../../../src/runner/flux/monitor.ts'
import { startFluxPart } from '../../../src/runner/flux/flux-part.ts'
import { JobRegistry, registerJob } from '../../../src/runner/job-registry.ts'
import { observeFluxValue } from '../../../src/runner/flux/observe.ts'
import { testRedisUrl, uniquePrefix } from '../../support/redis.ts'

// Two runner processes of one node, as the runner starts them: each its own sender over the node's
// two keys (both oracles of the aggregator, as `aggregator add-oracles` adds a node's keys), sharing
// one Redis prefix, so each owns one key; each its own flux monitor on the same job. Both act on
// every heartbeat at once: each submits as the oracle whose key it owns, so every oracle submits
// once a round, whichever process asks. Read from the aggregator's logs and the keys' receipts.

const NODE_KEYS = [ANVIL_PRIVATE_KEYS[1], ANVIL_PRIVATE_KEYS[5]] as string[]
const NODE = NODE_KEYS.map((key) => new Wallet(key).address)

describe('two runner processes of one node, one flux job', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  let server: Server
  let url = ''
  const senders: TxSender[] = []
  const monitors: FluxMonitor[] = []

  beforeAll(async () => {
    anvil = await startAnvil()
    provider = new JsonRpcProvider(anvil.rpcUrl, anvil.chainId, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 100,
    })
    server = createServer((_, response) => {
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ data: { result: 3000 } }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/value`
    const prefix = uniquePrefix('flux-processes')
    for (let index = 0; index < 2; index++) {
      const sender = createTxSender({
        rpcUrl: anvil.rpcUrl,
        chainId: anvil.chainId,
        keys: NODE_KEYS,
        redisUrl: testRedisUrl(),
        prefix,
        pollIntervalMs: 50,
        keyLeaseMs: 3_000,
      })
      await sender.start()
      senders.push(sender)
    }
    await waitFor(
      'each process owns one of the two keys',
      async () => senders.every((sender) => sender.ownership().available === 1),
      60_000,
      200,
    )
  }, 120_000)

  afterAll(async () => {
    for (const monitor of monitors) await monitor.stop()
    for (const sender of senders) await sender.close()
    server?.close()
    provider?.destroy()
    await anvil?.stop()
  })

  /** A FluxAggregator with the node's two keys as oracles, and a flux job on it (heartbeat 2 s). */
  async function feedWithJob(description: string) {
    const owner = new Wallet(ANVIL_PRIVATE_KEYS[0]!, provider)
    const { aggregator } = await deployAggregator(owner, {
      paymentAmount: 10n ** 16n,
      timeout: 600,
      decimals: 0,
      description,
      fund: 10n ** 19n,
    })
    await addOracles(owner, aggregator, NODE, { minSubmissions: 1, maxSubmissions: 2 })
    const { job, problems } = loadJobSpec(
      `type = "fluxmonitor"
schemaVersion = 1
name = "${description}"
contractAddress = "${aggregator}"
threshold = 50.0
idleTimerPeriod = "2s"
pollTimerPeriod = "1s"
observationSource = """
    fetch [type="http" method=GET url="${url}" timeout="1s"]
    parse [type="jsonparse" path="data,result"]
    fetch -> parse
"""
`,
      'flux.toml',
    )
    expect(problems).toEqual([])
    if (!job || !isFluxJob(job)) throw new Error('not a flux job')
    return { aggregator, job }
  }

  it('each oracle submits once a round, though both processes act on every heartbeat', async () => {
    const { aggregator, job } = await feedWithJob('two processes')
    for (const sender of senders)
      monitors.push(
        startFluxMonitor({
          chainId: anvil.chainId,
          provider,
          sender,
          jobs: [fluxJobOf(job)],
          observe: (fluxJob, meta, signal) => observeFluxValue(fluxJob, meta, { signal }),
          log: pino({ level: 'silent' }),
          tickMs: 100,
        }),
      )
    await waitFor(
      'round 5 answered',
      async () => (await readLatestRound(provider, aggregator)).roundId >= 5n,
      90_000,
      200,
    )
    for (const monitor of monitors.splice(0)) await monitor.stop()

    const logs = await provider.getLogs({
      address: aggregator,
      topics: [FLUX_TOPICS.submissionReceived],
      fromBlock: 0,
    })
    const perOracle = new Map<string, number>()
    for (const entry of logs) {
      const parsed = fluxAggregatorInterface.parseLog(entry)!
      const key = `round ${parsed.args.round} oracle ${parsed.args.oracle}`
      perOracle.set(key, (perOracle.get(key) ?? 0) + 1)
    }
    const twice = [...perOracle].filter(([, count]) => count > 1)
    expect(twice, 'an oracle submitted twice in a round').toEqual([])
    // Each process submitted, as the oracle whose key it owns.
    for (const oracle of NODE)
      expect(
        [...perOracle.keys()].some((key) => key.endsWith(oracle)),
        oracle,
      ).toBe(true)
    // Nothing was sent that reverted: every transaction of the node's keys succeeded.
    const head = await provider.getBlockNumber()
    for (let number = 1; number <= head; number++) {
      const block = await provider.getBlock(number, true)
      for (const tx of block?.prefetchedTransactions ?? [])
        if (NODE.includes(tx.from))
          expect((await provider.getTransactionReceipt(tx.hash))?.status, tx.hash).toBe(1)
    }
  }, 150_000)

  it('a reload that removes the job stops its submissions; one that adds it back resumes them', async () => {
    const { aggregator, job } = await feedWithJob('reloaded')
    const registry = new JobRegistry([registerJob(job)])
    const round = async () => (await readLatestRound(provider, aggregator)).roundId
    const part = startFluxPart({
      chainId: anvil.chainId,
      provider,
      sender: senders[0]!,
      registry,
      log: pino({ level: 'silent' }),
      tickMs: 100,
    })
    try {
      await waitFor('round 2 answered', async () => (await round()) >= 2n, 60_000, 200)
      registry.replace([])
      expect(part.jobs).toEqual([])
      // A submission in flight when the job went may still land: the round it answers is counted.
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      const removedAt = await round()
      // Three heartbeats' time with no job: no round.
      await new Promise((resolve) => setTimeout(resolve, 6_000))
      expect(await round()).toBe(removedAt)
      registry.replace([registerJob(job)])
      await waitFor(
        'a round once the job is back',
        async () => (await round()) > removedAt,
        60_000,
        200,
      )
    } finally {
      await part.stop()
    }
  }, 150_000)

  it('stop() returns while a look is stuck in its pipeline, after its bound', async () => {
    const { job } = await feedWithJob('stuck')
    let observing = false
    const monitor = startFluxMonitor({
      chainId: anvil.chainId,
      provider,
      sender: senders[0]!,
      jobs: [fluxJobOf(job)],
      // A pipeline that never ends and does not listen to the stop.
      observe: () => {
        observing = true
        return new Promise<Decimal>(() => undefined)
      },
      log: pino({ level: 'silent' }),
      tickMs: 100,
      stopTimeoutMs: 1_000,
    })
    await waitFor('the look in the pipeline', async () => observing, 30_000, 50)
    await monitor.stop()
  }, 60_000)
})
