import { createLogger } from '../../src/config/logger.ts'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { startRunnerFromSettings, type Runners } from '../../src/runner/start.ts'
import { startJsonRpcTap, type JsonRpcTap } from './json-rpc-tap.ts'
import { testRedisUrl } from './redis.ts'

/** A dev stack whose feed service can hold a run's fetch until the test lets it go. */
export interface HeldFeedStack {
  stack: DevStack
  runner: Runners
  /** With `tapped`: the JSON-RPC tap the runner reads the chain through (the test's calls go around it). */
  tap?: JsonRpcTap
  /** Sends one game-odds request whose fetch is held; answers once the run is fetching. */
  requestHeld(): Promise<{ requestId: string; blockNumber: number }>
  /** Lets the held fetch go on. */
  release(): void
  stop(): Promise<void>
}

/**
 * Starts a dev stack (runner included) under `prefix`, on the test Redis; with `tapped`, the runner
 * reaches the chain through a JSON-RPC tap (test/support/json-rpc-tap.ts) and the rest of the stack,
 * the test's calls included, around it.
 */
export async function startHeldFeedStack(
  prefix: string,
  options: { tapped?: boolean } = {},
): Promise<HeldFeedStack> {
  let releaseFeed: () => void = () => undefined
  let holdNext = false
  let feedHeld = false
  const stack = await startDevStack({
    env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
    prefix,
    runner: !options.tapped,
    feedIntercept: async () => {
      if (!holdNext) return false
      holdNext = false
      feedHeld = true
      await new Promise<void>((resolve) => (releaseFeed = resolve))
      return false
    },
  })
  const { runner, tap } = options.tapped
    ? await tappedRunner(stack).catch(async (error: unknown) => {
        await stack.stop()
        throw error
      })
    : { runner: stack.runner!, tap: undefined }
  const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
  const odds: DemoCase = (await buildDemoCases(stack, registry.jobs)).find((demoCase) =>
    demoCase.job.name.includes('game-odds'),
  )!
  return {
    stack,
    runner,
    ...(tap ? { tap } : {}),
    async requestHeld() {
      const { consumer, deployer } = stack.contracts
      holdNext = true
      feedHeld = false
      const [sent] = await sendConsumerRequests(consumer, deployer, [
        {
          externalJobId: odds.job.externalJobId,
          valueType: odds.shape.answerType,
          params: odds.params,
          payment: 0n,
        },
      ])
      await waitFor('the run fetching', async () => feedHeld, 30_000, 20)
      return { requestId: sent!.requestId, blockNumber: sent!.blockNumber }
    },
    release: () => releaseFeed(),
    async stop() {
      releaseFeed()
      if (tap) await runner.stop()
      await tap?.stop()
      await stack.stop()
    },
  }
}

/** The stack's runner, started here with its RPC_URL a tap in front of the stack's chain. */
async function tappedRunner(stack: DevStack): Promise<{ runner: Runners; tap: JsonRpcTap }> {
  const tap = await startJsonRpcTap({
    rpcUrl: stack.rpcUrl,
    wsUrl: stack.rpcUrl.replace(/^http/, 'ws'),
  })
  try {
    const settings = { ...stack.settings, RPC_URL: tap.httpUrl }
    const runner = await startRunnerFromSettings(settings, createLogger(settings, 'held-runner'), {
      env: { ...process.env, ...stack.env, RPC_URL: tap.httpUrl },
    })
    return { runner, tap }
  } catch (error) {
    await tap.stop()
    throw error
  }
}
