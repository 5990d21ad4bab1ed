/**
 * What the phases stand on: one fresh chain per phase (anvil, the contracts, a block watcher, the pool
 * backstop), the feedrunner processes, and the requests the load generator makes.
 *
 * Every phase runs on its own fresh anvil on the same port. anvil 1.7.1 rebuilds the whole state trie
 * for every block, so a block costs it more the more storage the chain holds: the consumer keeps 2.6
 * slots per request before its answer (measured with anvil_dumpState) and one more after, the Operator
 * one per open request, and under Prague each block also adds one to the EIP-2935 history (the dev
 * chain runs Cancun for that reason, src/dev/anvil.ts). Phases sharing one chain
 * would be penalised by the phases before them and the baseline would not be comparable. The
 * contracts land at the same addresses on every fresh chain, so the adapter, fetch worker and feed
 * service keep running across phases; each phase starts its own runner process.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Wallet } from 'ethers'
import type { Redis } from 'ioredis'
import type { RedisSourceTap } from './redis-commands.ts'
import type { ArtifactSet } from '../../src/chain/artifacts.ts'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { deployDevContracts, type DevContracts } from '../../src/dev/deploy.ts'
import { startFeedrunnerProcess, type FeedrunnerProcess } from '../../src/dev/feedrunner-process.ts'
import { startPoolBackstop, type PoolBackstop } from '../../src/dev/pool-backstop.ts'
import type { ConsumerRequest } from '../../src/dev/requests.ts'
import { BlockWatcher, memoryOf, rpc } from './measure.ts'
import { perfNodeArgs, recordPerf } from './perf-record.ts'
import type { Side } from './reference.ts'
import {
  ANVIL_ARGS,
  BASELINE_KEY,
  GAME_ODDS_PARAMS,
  RPC_CALLS,
  RUNNER_KEYS,
  RUNNER_NODE_ARGS,
} from './settings.ts'

export interface Chain {
  anvil: Anvil
  dev: DevContracts
  watcher: BlockWatcher
  /** Mines what anvil's automine left in its pool, as `feedrunner dev` does; counts it. */
  backstop: PoolBackstop
  /** Peak RSS of this phase's anvil, read just before it stops. */
  peakRssMb: number
  stop(): Promise<void>
}

/** The chain of the running phase, stopped by the bench's cleanup if the bench is interrupted. */
let currentChain: Chain | undefined

/**
 * Starts anvil on a port free now (a port picked when the bench started may since be another
 * process's: the suite runs beside it), deploys the contracts (same addresses every time), funds
 * the keys and starts a block watcher. With `blockTimeSeconds` the chain then mines a block every
 * that many seconds instead of one per transaction: deploying under automine first takes a moment
 * where a dozen transactions would otherwise wait a block each.
 */
export async function openChain(
  artifacts: ArtifactSet,
  options: { blockTimeSeconds?: number; deploy?: typeof deployDevContracts } = {},
): Promise<Chain> {
  await currentChain?.stop()
  const anvil = await startAnvil({ extraArgs: ANVIL_ARGS, countCalls: RPC_CALLS })
  let dev: DevContracts | undefined
  try {
    // A reference checkout (`--against`) deploys with its own code, the contracts it compiled.
    dev = await (options.deploy ?? deployDevContracts)(anvil.rpcUrl, {
      nodeKeys: [...RUNNER_KEYS, BASELINE_KEY],
      artifacts,
    })
    await fundKeys(dev, [...RUNNER_KEYS, BASELINE_KEY])
    if (options.blockTimeSeconds !== undefined) {
      await rpc(anvil.rpcUrl, 'evm_setAutomine', [false])
      await rpc(anvil.rpcUrl, 'evm_setIntervalMining', [options.blockTimeSeconds])
    }
    const watcher = new BlockWatcher(anvil.rpcUrl, anvil.wsUrl)
    await watcher.start()
    const backstop = startPoolBackstop(anvil.rpcUrl)
    const opened = dev
    const chain: Chain = {
      anvil,
      dev: opened,
      watcher,
      backstop,
      peakRssMb: Number.NaN,
      async stop() {
        if (currentChain === chain) currentChain = undefined
        chain.peakRssMb = memoryOf(anvil.process.pid)?.peakMb ?? chain.peakRssMb
        backstop.stop()
        await watcher.stop()
        await opened.provider.destroy()
        await anvil.stop()
      },
    }
    currentChain = chain
    return chain
  } catch (error) {
    await dev?.provider.destroy()
    await anvil.stop()
    throw error
  }
}

/** Where BENCH_PROFILE's `.cpuprofile` files go. */
export const PROFILE_DIR = join(tmpdir(), 'feedrunner-bench-profiles')

/**
 * `bin/feedrunner.js <args>` (`bin`: the side's CLI, this checkout's by default), CPU-profiled when
 * its name starts with BENCH_PROFILE and recorded by perf when it starts with BENCH_PERF; a long
 * phase needs only the end of its output.
 */
export async function startPart(
  name: string,
  args: readonly string[],
  env: Record<string, string>,
  ready: RegExp,
  bin?: string,
): Promise<FeedrunnerProcess> {
  const profile =
    process.env.BENCH_PROFILE && name.startsWith(process.env.BENCH_PROFILE)
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${PROFILE_DIR}`,
          // Named by the part (and its side, with --against), so a run's profiles can be told apart.
          `--cpu-prof-name=${name.replace(/[^\w.-]+/g, '-')}-${Date.now()}.cpuprofile`,
        ]
      : []
  const nodeArgs = [
    ...(args[0] === 'runner' ? RUNNER_NODE_ARGS : []),
    ...profile,
    ...perfNodeArgs(name),
  ]
  const part = await startFeedrunnerProcess({
    name,
    args,
    env,
    ready,
    nodeArgs,
    ...(bin ? { bin } : {}),
    keepOutputChars: 20_000,
  })
  await recordPerf(name, part.pid).catch(async (error: unknown) => {
    await part.stop()
    throw error
  })
  return part
}

/** What stays the same across phases; each phase brings its own chain. */
export interface Context {
  /** The checkout whose processes this context runs (this one, or the `--against` reference). */
  side: Side
  artifacts: ArtifactSet
  redis: Redis
  baseEnv: Record<string, string>
  externalJobId: string
  /** The blocks a request of the job waits for (its minIncomingConfirmations, at least the dev chain's 1). */
  confirmations: number
  prefix: string
  /** Long-lived processes whose CPU time is accounted per phase, besides the runner and anvil. */
  pids: Record<string, number>
  /** Peak RSS of each phase's anvil. */
  anvilPeakRssMb: number[]
  /** With BENCH_REDIS_SOURCES=1: every Redis command counted by what sent it (MONITOR). */
  redisSources?: RedisSourceTap
}

export const REQUEST: (ctx: Context) => ConsumerRequest = (ctx) => ({
  externalJobId: ctx.externalJobId,
  valueType: 'uint256',
  params: GAME_ODDS_PARAMS,
  payment: 0n,
})

/** A `send` over plain HTTP, for waitForNonce. */
export function minedSender(rpcUrl: string) {
  return { send: (method: string, params: unknown[]) => rpc<unknown>(rpcUrl, method, params) }
}

/** Gives every key without ether 100 ETH from the deployer (not every listed dev key is a funded anvil account). */
export async function fundKeys(dev: DevContracts, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    const address = new Wallet(key).address
    if ((await dev.provider.getBalance(address)) > 0n) continue
    const receipt = await (
      await dev.deployer.sendTransaction({ to: address, value: 10n ** 20n })
    ).wait()
    if (receipt?.status !== 1) throw new Error(`funding ${address} failed`)
  }
}

/** Stops the running phase's chain, if any (the bench's cleanup, when it is interrupted). */
export async function stopCurrentChain(): Promise<void> {
  await currentChain?.stop()
}
