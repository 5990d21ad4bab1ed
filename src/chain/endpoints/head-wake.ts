import type { Logger } from '../../config/logger.ts'
import { rootCauseFirst } from '../../config/errors.ts'
import { connectProvider, type ChainProvider } from '../provider.ts'

/** A `newHeads` subscription that only wakes: every read still goes through the endpoint pool. */
export interface HeadWake {
  stop(): Promise<void>
}

/**
 * Subscribes to `newHeads` on the first WebSocket endpoint of `urls` that opens, and calls `onHead`
 * for each head. The pool reads a ws(s) endpoint over http(s) and polls every poll interval; a wake
 * at each head takes that interval out of a request's latency (paced at 50/s on the dev chain, block
 * -> received was 72 ms polling every 100 ms). When no WebSocket endpoint opens (a debug line) or
 * its socket closes later, the listener goes on polling: a wake is a shortcut, not a dependency.
 */
export async function startHeadWake(
  urls: readonly string[],
  chainId: number,
  onHead: () => void,
  log: Logger,
): Promise<HeadWake> {
  for (const url of urls.filter((candidate) => /^wss?:/.test(candidate))) {
    let provider: ChainProvider | undefined
    try {
      provider = await connectProvider(url, { chainId })
      await provider.on('block', onHead)
      const subscribed = provider
      return {
        async stop() {
          // Destroying the provider ends its subscription too; unsubscribing first races the destroy.
          await subscribed.destroy()
        },
      }
    } catch (error) {
      await provider?.destroy()
      log.debug(
        { chainId, err: rootCauseFirst(error) },
        'no newHeads subscription on a WebSocket endpoint: the listener polls',
      )
    }
  }
  return { stop: async () => undefined }
}
