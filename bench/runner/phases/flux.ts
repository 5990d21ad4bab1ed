/**
 * The flux phase: what flux monitor jobs cost a node on a chain with block times. BENCH_FLUX_JOBS
 * FluxAggregators (100) are deployed, the runner's key an oracle of each; anvil then mines a block
 * every BENCH_BLOCK_TIME seconds, and one runner (behind the counting JSON-RPC proxy) serves first
 * one flux job, then all of them (its jobs folder rewritten, SIGHUP). Every job asks the adapter the
 * same game-odds query every BENCH_FLUX_POLL_SECONDS. Once each job's aggregator has its first round
 * (the heartbeat of an aggregator that never answered) and two poll periods more (the poll after the
 * round reads again what it changed), a stretch of BENCH_FLUX_SECONDS is read:
 *
 * - RPC calls a block for the whole runner, by method, and the block-driven reads among them (the
 *   head, the round logs): the target is at most one a block a chain whatever the number of jobs;
 * - the polls' reads (eth_call) a job a poll;
 * - the bridge calls to the adapter (one a job a poll: each job runs its pipeline) and the fetch worker's
 *   upstream fetches a poll: equal queries are fetched once a poll period at most;
 * - Redis commands a poll (every process of the installation, the adapter's and worker's too);
 * - the gas of a submission, from the first rounds' SubmissionReceived logs and their receipts.
 */
import { randomUUID } from 'node:crypto'
import { Wallet } from 'ethers'
import { FLUX_TOPICS, readLatestRound } from '../../../src/chain/flux/aggregator.ts'
import { addOracles, deployAggregator } from '../../../src/chain/flux/aggregator-admin.ts'
import { ANVIL_PRIVATE_KEYS } from '../../../src/dev/anvil.ts'
import { waitFor } from '../../../src/dev/process.ts'
import type { RpcProxy } from '../../../src/dev/rpc-call-counter.ts'
import { fluxArtifacts } from '../../../src/chain/artifacts.ts'
import { fundKeys, openChain, type Chain, type Context } from '../load.ts'
import { round, rpc, summary } from '../measure.ts'
import { startBridgeTap, type BridgeCounts, type BridgeTap } from './bridge-tap.ts'
import {
  BLOCK_TIME,
  FLUX_JOBS,
  FLUX_POLL_SECONDS,
  FLUX_SECONDS,
  GAME_ODDS_PARAMS,
  RUNNER_KEYS,
  step,
} from '../settings.ts'
import {
  costsBetween,
  markCosts,
  pause,
  startPushStage,
  totalOf,
  type PushRunner,
  type PushStage,
} from './push-runner.ts'

export interface FluxStretch {
  jobs: number
  seconds: number
  blocks: number
  /** Polls of each job in the stretch, from its bridge calls (one a poll). */
  pollsPerJob: number
  rpc: {
    perBlock: number
    /** The head and the round logs: what is read a block, whatever the jobs. */
    blockReadsPerBlock: number
    byMethodPerBlock: Record<string, number>
    /** The polls' reads (the round's state, the oracles, the latest round) a job a poll. */
    pollReadsPerJobPerPoll: number
  }
  /** The bridge calls and the feed service's answers (bridge-tap.ts), a poll period (every job polled once). */
  bridgeCallsPerPoll: number
  fetchesPerPoll: number
  redisCommandsPerPoll: number
  runnerCpuMsPerSecond: number
}

export interface FluxResult {
  blockSeconds: number
  pollSeconds: number
  one: FluxStretch
  all: FluxStretch
  /** Bridge calls and feed-service answers over the whole phase (the first rounds' too). */
  bridge: BridgeCounts
  /** Gas a submission (the first rounds'), median and range. */
  gasPerSubmission: { p50: number; min: number; max: number; submissions: number }
}

/** A poll may not be shorter than its fetch may take (the loader checks it, as Chainlink does). */
const BRIDGE_TIMEOUT_SECONDS = Math.max(1, Math.min(5, FLUX_POLL_SECONDS - 1))
const BLOCK_METHODS = new Set(['eth_getBlockByNumber', 'eth_blockNumber', 'eth_getLogs'])

/** The chain's deployer and four keys of the phase's own (funded by it), each an aggregator owner. */
const DEPLOYER_KEYS = [
  ANVIL_PRIVATE_KEYS[0] as string,
  ...Array.from({ length: 4 }, () => Wallet.createRandom().privateKey),
]

/**
 * Deploys `count` aggregators, each with the runner's key as its oracle: five owners, each deploying
 * its share one after another (one sender's transactions in order: a nonce shared by concurrent
 * sends leaves a gap when one of them fails before it is sent).
 */
async function deployAggregators(chain: Chain, count: number): Promise<string[]> {
  const artifacts = fluxArtifacts()
  await fundKeys(chain.dev, DEPLOYER_KEYS)
  const oracle = new Wallet(RUNNER_KEYS[0] as string).address
  const lanes = DEPLOYER_KEYS.map((key, lane) => async () => {
    const owner = new Wallet(key, chain.dev.provider)
    const deployed: Array<[number, string]> = []
    for (let index = lane; index < count; index += DEPLOYER_KEYS.length) {
      const { aggregator } = await deployAggregator(owner, {
        link: chain.dev.addresses.linkToken,
        paymentAmount: 0n,
        timeout: 600,
        decimals: 2,
        description: `bench flux ${index}`,
        artifacts,
      })
      await addOracles(owner, aggregator, [oracle], { minSubmissions: 1 })
      deployed.push([index, aggregator])
    }
    return deployed
  })
  const deployed = (await Promise.all(lanes.map((lane) => lane()))).flat()
  return deployed.sort(([a], [b]) => a - b).map(([, aggregator]) => aggregator)
}

/** A quoted DOT attribute inside a TOML basic string: `"` escaped for DOT, then `\` for TOML. */
const dotInToml = (text: string) => text.replace(/"/g, '\\"').replace(/\\/g, '\\\\')

function fluxSpecs(aggregators: readonly string[]): Record<string, string> {
  const requestData = JSON.stringify({
    id: 'flux',
    data: { endpoint: 'game-odds', key: '##signKey', ...Object.fromEntries(GAME_ODDS_PARAMS) },
  })
  return Object.fromEntries(
    aggregators.map((aggregator, index) => [
      `flux-${index}.toml`,
      `type = "fluxmonitor"
schemaVersion = 1
name = "bench flux ${index}"
externalJobID = "${randomUUID()}"
contractAddress = "${aggregator}"
evmChainID = "31337"
threshold = 0.5
idleTimerPeriod = "1h"
pollTimerPeriod = "${FLUX_POLL_SECONDS}s"
observationSource = """
    fetch [type="bridge" name="datafeed" timeout="${BRIDGE_TIMEOUT_SECONDS}s" requestData="${dotInToml(requestData)}"]
    parse [type="jsonparse" path="result" data="$(fetch)"]
    fetch -> parse
"""
`,
    ]),
  )
}

const headOf = async (chain: Chain) =>
  Number(await rpc<string>(chain.anvil.rpcUrl, 'eth_blockNumber'))

/** Waits until every aggregator of `aggregators` has answered a round. */
async function firstRounds(chain: Chain, aggregators: readonly string[]): Promise<void> {
  await waitFor(
    `round 1 of ${aggregators.length} aggregators`,
    async () => {
      for (const aggregator of aggregators)
        if ((await readLatestRound(chain.dev.provider, aggregator)).roundId < 1n) return false
      return true
    },
    120_000 + aggregators.length * 2_000,
    500,
  )
}

/** One stretch of the runner serving `jobs` flux jobs. */
async function measureStretch(
  ctx: Context,
  chain: Chain,
  { runner, proxy, tap }: { runner: PushRunner; proxy: RpcProxy; tap: BridgeTap },
  jobs: number,
): Promise<FluxStretch> {
  const counts = async () => ({
    head: await headOf(chain),
    ...tap.counts(),
    costs: await markCosts(ctx, runner.part.pid, proxy),
  })
  step(`flux: ${jobs} job${jobs > 1 ? 's' : ''}, ${FLUX_SECONDS} s`)
  const before = await counts()
  await pause(FLUX_SECONDS * 1000)
  const after = await counts()
  const costs = costsBetween(before.costs, after.costs)
  const blocks = Math.max(1, after.head - before.head)
  const answers = after.calls - before.calls
  const pollsPerJob = answers / jobs
  const polls = Math.max(1e-9, pollsPerJob)
  const perBlock = (calls: number) => round(calls / blocks, 2)
  const blockReads = Object.entries(costs.rpcCalls).filter(([method]) => BLOCK_METHODS.has(method))
  return {
    jobs,
    seconds: costs.seconds,
    blocks,
    pollsPerJob: round(pollsPerJob, 2),
    rpc: {
      perBlock: perBlock(totalOf(costs.rpcCalls)),
      blockReadsPerBlock: perBlock(blockReads.reduce((sum, [, calls]) => sum + calls, 0)),
      byMethodPerBlock: Object.fromEntries(
        Object.entries(costs.rpcCalls).map(([method, calls]) => [method, perBlock(calls)]),
      ),
      pollReadsPerJobPerPoll: round((costs.rpcCalls.eth_call ?? 0) / jobs / polls, 2),
    },
    bridgeCallsPerPoll: round(answers / polls, 2),
    fetchesPerPoll: round((after.fetches - before.fetches) / polls, 2),
    redisCommandsPerPoll: round(costs.redisCommands / polls, 1),
    runnerCpuMsPerSecond: costs.cpuMsPerSecond,
  }
}

/** The gas each submission of the aggregators' rounds used, from its receipt. */
async function submissionGas(chain: Chain, aggregators: readonly string[], fromBlock: number) {
  const logs = await chain.dev.provider.getLogs({
    address: [...aggregators],
    topics: [FLUX_TOPICS.submissionReceived],
    fromBlock,
  })
  const hashes = [...new Set(logs.map((entry) => entry.transactionHash))]
  const gas = await Promise.all(
    hashes.map(async (hash) =>
      Number((await chain.dev.provider.getTransactionReceipt(hash))!.gasUsed),
    ),
  )
  const { p50, max } = summary(gas)
  return { p50, min: gas.length > 0 ? Math.min(...gas) : Number.NaN, max, submissions: gas.length }
}

export async function runFluxPhase(ctx: Context): Promise<FluxResult> {
  const chain = await openChain(ctx.artifacts)
  let tap: BridgeTap | undefined
  let stage: PushStage | undefined
  try {
    step(`flux: deploying ${FLUX_JOBS} aggregators`)
    const aggregators = await deployAggregators(chain, FLUX_JOBS)
    const fromBlock = (await headOf(chain)) + 1
    await rpc(chain.anvil.rpcUrl, 'evm_setAutomine', [false])
    await rpc(chain.anvil.rpcUrl, 'evm_setIntervalMining', [BLOCK_TIME])
    // Bridge calls and the feed service's answers among them, counted between the runner and the adapter.
    tap = await startBridgeTap(ctx.baseEnv.BRIDGE_DATAFEED_URL as string)
    stage = await startPushStage(ctx, chain, {
      label: 'flux',
      specs: fluxSpecs(aggregators.slice(0, 1)),
      env: { BRIDGE_DATAFEED_URL: tap.url },
    })
    const parts = { runner: stage.runner, proxy: stage.proxy, tap }
    // Each stretch is the polls of jobs with nothing to do: it starts once the poll after each
    // job's first round is behind it too (that poll reads again what the round's logs said
    // changed: the round state and the latest round, two eth_calls a job), between polls alike.
    const settled = () => pause(2 * FLUX_POLL_SECONDS * 1000)
    await firstRounds(chain, aggregators.slice(0, 1))
    await settled()
    const one = await measureStretch(ctx, chain, parts, 1)
    stage.folder.write(fluxSpecs(aggregators))
    stage.runner.reload()
    await firstRounds(chain, aggregators)
    await settled()
    const all = await measureStretch(ctx, chain, parts, aggregators.length)
    return {
      blockSeconds: BLOCK_TIME,
      pollSeconds: FLUX_POLL_SECONDS,
      one,
      all,
      bridge: tap.counts(),
      gasPerSubmission: await submissionGas(chain, aggregators, fromBlock),
    }
  } finally {
    await tap?.stop()
    // The stage stops the chain; without one (a failed deploy or start), the chain stops here.
    if (stage) await stage.close()
    else if (!tap) await chain.stop()
  }
}
