import { connectProvider } from '../chain/provider.ts'
import { Queue } from 'bullmq'
import { errorKindOf, FeedrunnerError, rootCauseFirst } from '../config/errors.ts'
import { connectClient } from '../queue/connection.ts'
import { RedisClock } from '../queue/redis-clock.ts'
import { replayRun } from '../runner/replay.ts'
import { chainsFromSettings } from '../config/chains.ts'
import type { Settings } from '../config/settings.ts'
import { requestsQueueName } from '../runner/requests-queue.ts'
import { requestJobOptions, retryPolicyOf } from '../runner/retry-policy.ts'
import { RunStore, splitRunId } from '../runner/run-record.ts'
import { withDevStack } from './dev-state.ts'
import { settingsOrExit } from './lifecycle.ts'

/** The default chain of `feedrunner dev`, when RPC_URL is not set. */
const DEV_RPC_URL = 'http://127.0.0.1:8545'

/** `feedrunner runs replay <requestId>`: an errored run back to the runner, while its request is open. */
export async function runReplayAction(idOrPrefix: string): Promise<void> {
  // The dev stack of this checkout, when one runs, says where its Redis, queues and chain are.
  const settings = settingsOrExit(withDevStack().env)
  const opened: Array<() => void> = []
  try {
    const redis = await connectClient(settings.REDIS_URL)
    opened.push(() => redis.disconnect())
    // Any unique start of the id will do, as for runs show; the run id names its chain.
    const matches = await new RunStore(redis, `${settings.QUEUE_PREFIX}:runner`).findByPrefix(
      idOrPrefix,
    )
    if (matches.length !== 1)
      throw new FeedrunnerError(
        matches.length === 0
          ? `no run whose request id starts with ${idOrPrefix} under queue prefix ${settings.QUEUE_PREFIX}`
          : `${idOrPrefix} is the start of several runs (${matches.join(', ')}): give more of it`,
        { kind: 'bad_input' },
      )
    const { chainId, requestId } = splitRunId(matches[0]!)
    if (chainId === undefined)
      throw new FeedrunnerError(`run ${matches[0]} names no chain`, { kind: 'bad_input' })
    const { url: rpcUrl, setting } = readEndpointOf(settings, chainId)
    const provider = await connectProvider(rpcUrl, { chainId }).catch((error: unknown) => {
      throw new FeedrunnerError(`cannot reach chain ${chainId} at ${setting}`, {
        kind: 'unavailable',
        cause: error,
      })
    })
    opened.push(() => provider.destroy())
    const runs = new RunStore(redis, `${settings.QUEUE_PREFIX}:runner`, chainId)
    const requestsQueue = new Queue(requestsQueueName(chainId), {
      connection: redis,
      prefix: settings.QUEUE_PREFIX,
      defaultJobOptions: requestJobOptions(retryPolicyOf(settings)),
    })
    // One reading of Redis's clock, which stamps the job as a runner's intake does.
    const clock = new RedisClock(redis, { slotKey: `${settings.QUEUE_PREFIX}:clock` })
    await clock.sync()
    const replay = await replayRun(requestId, {
      runs,
      requestsQueue,
      provider,
      clock,
      logRangeBlocks: settings.CHAIN_LOG_RANGE_BLOCKS,
    })
    console.log(
      `replay ${replay.replay} of request ${requestId} (job ${replay.job}) is queued; the request stays open ${Math.floor(replay.secondsLeft / 60)} min more. A runner on this queue prefix (${settings.QUEUE_PREFIX}) runs it: feedrunner runs show ${requestId}`,
    )
  } catch (error) {
    console.error(`not replayed: ${rootCauseFirst(error)}`)
    process.exitCode = errorKindOf(error) === 'bad_input' ? 1 : 2
  } finally {
    for (const close of opened.reverse()) close()
  }
}

/** Where to read chain `chainId`: its first read endpoint in CHAINS_FILE, else RPC_URL (or the dev chain's). */
function readEndpointOf(settings: Settings, chainId: number): { url: string; setting: string } {
  if (!settings.CHAINS_FILE) return { url: settings.RPC_URL ?? DEV_RPC_URL, setting: 'RPC_URL' }
  const chain = chainsFromSettings(settings).find((declared) => declared.chainId === chainId)
  const endpoint = chain?.endpoints.find((declared) => !declared.sendOnly)
  if (!endpoint)
    throw new FeedrunnerError(
      `chain ${chainId} is not in CHAINS_FILE ${settings.CHAINS_FILE}: the run cannot be replayed from here`,
      { kind: 'bad_input' },
    )
  return { url: endpoint.url, setting: endpoint.setting }
}
