import { wakeableSleep } from '../wakeable-sleep.ts'
import type { Head } from './model.ts'

export interface PollLoop {
  start(): void
  /** Ends the current pause: a broadcast was just answered. */
  wake(): void
  /** Stops after the look under way. */
  stop(): Promise<void>
}

/**
 * The one loop that looks at the chain for every key: reads the head, then lets each key's confirmer
 * check its receipts, confirmations and stuck transactions.
 *
 * The loop sleeps between looks at the chain; a broadcast that was just answered wakes it, as on a
 * fast chain (an automining dev chain answers once the block is mined) the receipt is there.
 *
 * While no key has anything to watch (`hasWork` false) the loop reads nothing: a runner waiting for
 * requests would otherwise ask the node for its latest block every poll interval for nobody (86,400
 * calls a day per chain at the default second), on top of the listener's own reads. The fees a key
 * signs with after such a pause come from a head read then (node-client.ts, `currentFees`).
 */
export function createPollLoop(
  readHead: () => Promise<Head>,
  checkAll: (current: Head) => Promise<void>,
  pollIntervalMs: number,
  reportError: (error: unknown) => void,
  hasWork: () => boolean = () => true,
): PollLoop {
  const pause = wakeableSleep()
  let polling = false
  let loop: Promise<void> | undefined

  async function run(): Promise<void> {
    while (polling) {
      try {
        if (hasWork()) await checkAll(await readHead())
      } catch (error) {
        reportError(error)
      }
      if (!polling) break
      await pause.sleep(pollIntervalMs)
    }
  }

  return {
    start() {
      polling = true
      loop = run()
    },
    wake: () => pause.wake(),
    async stop() {
      polling = false
      pause.wake()
      await loop
    },
  }
}
