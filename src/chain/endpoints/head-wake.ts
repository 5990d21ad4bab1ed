import type { Logger } from '../../config/logger.ts'
import { rootCauseFirst } from '../../config/errors.ts'
import { connectProvider, HeadTrackingWebSocketProvider, type ChainProvider } from '../provider.ts'

/** A `newHeads` subscription that only wakes: every read still goes through the endpoint pool. */
export interface HeadWake {
  stop(): Promise<void>
}

/** How long after a socket closed (or none opened) the subscription is tried again. */
const RESUBSCRIBE_MS = 5_000

/** The `ws` socket under an ethers WebSocketProvider: only its close event is listened to here. */
interface ClosingSocket {
  on(event: 'close', listener: () => void): unknown
}

/**
 * Subscribes to `newHeads` on the first WebSocket endpoint of `urls` that opens, and calls `onHead`
 * for each head. The pool reads a ws(s) endpoint over http(s) and polls every poll interval; a wake
 * at each head takes that interval out of a request's latency (paced at 50/s on the dev chain, block
 * -> received was 72 ms polling every 100 ms). While no WebSocket endpoint opens (one debug line per
 * outage), or after its socket closed (a node restarted), the listener goes on polling and the
 * subscription is tried again every `resubscribeMs`: a wake is a shortcut, not a dependency.
 * `onHead` is given the notified header as the node sent it (the pool answers `latest` with it, so
 * the wake costs no head read), when the provider kept it.
 */
export async function startHeadWake(
  urls: readonly string[],
  chainId: number,
  onHead: (header: unknown) => void,
  log: Logger,
  resubscribeMs = RESUBSCRIBE_MS,
): Promise<HeadWake> {
  const candidates = urls.filter((candidate) => /^wss?:/.test(candidate))
  let stopped = false
  let current: ChainProvider | undefined
  let retry: NodeJS.Timeout | undefined
  let saidDown = false

  async function subscribe(): Promise<boolean> {
    for (const url of candidates) {
      let provider: ChainProvider | undefined
      try {
        provider = await connectProvider(url, { chainId })
        const notifying = provider
        await provider.on('block', () =>
          onHead(
            notifying instanceof HeadTrackingWebSocketProvider
              ? notifying.lastHeadBlock
              : undefined,
          ),
        )
        if (stopped) {
          await provider.destroy()
          return true
        }
        const subscribed = provider
        current = subscribed
        saidDown = false
        socketOf(subscribed)?.on('close', () => {
          if (current !== subscribed) return
          current = undefined
          scheduleRetry()
        })
        return true
      } catch (error) {
        await provider?.destroy()
        if (!saidDown)
          log.debug(
            { chainId, err: rootCauseFirst(error) },
            'no newHeads subscription on a WebSocket endpoint: the listener polls',
          )
        saidDown = true
      }
    }
    return false
  }

  function scheduleRetry(): void {
    if (stopped) return
    retry = setTimeout(() => {
      void subscribe().then((subscribed) => subscribed || scheduleRetry())
    }, resubscribeMs)
    retry.unref()
  }

  if (candidates.length > 0 && !(await subscribe())) scheduleRetry()
  return {
    async stop() {
      stopped = true
      clearTimeout(retry)
      const subscribed = current
      current = undefined
      // Destroying the provider ends its subscription too; unsubscribing first races the destroy.
      await subscribed?.destroy()
    },
  }
}

function socketOf(provider: ChainProvider): ClosingSocket | undefined {
  const socket = 'websocket' in provider ? (provider.websocket as unknown) : undefined
  return typeof (socket as Partial<ClosingSocket> | undefined)?.on === 'function'
    ? (socket as ClosingSocket)
    : undefined
}
