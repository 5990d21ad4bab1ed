import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl } from './redis.ts'

/** A dev stack whose feed service can hold a run's fetch until the test lets it go. */
export interface HeldFeedStack {
  stack: DevStack
  /** Sends one game-odds request whose fetch is held; answers once the run is fetching. */
  requestHeld(): Promise<{ requestId: string; blockNumber: number }>
  /** Lets the held fetch go on. */
  release(): void
  stop(): Promise<void>
}

/** Starts a dev stack (runner included) under `prefix`, on the test Redis. */
export async function startHeldFeedStack(prefix: string): Promise<HeldFeedStack> {
  let releaseFeed: () => void = () => undefined
  let holdNext = false
  let feedHeld = false
  const stack = await startDevStack({
    env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
    prefix,
    feedIntercept: async () => {
      if (!holdNext) return false
      holdNext = false
      feedHeld = true
      await new Promise<void>((resolve) => (releaseFeed = resolve))
      return false
    },
  })
  const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
  const odds: DemoCase = (await buildDemoCases(stack, registry.jobs)).find((demoCase) =>
    demoCase.job.name.includes('game-odds'),
  )!
  return {
    stack,
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
      await stack.stop()
    },
  }
}
