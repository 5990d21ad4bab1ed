import { createHmac, randomBytes } from 'node:crypto'
import { FeedrunnerError } from '../config/errors.ts'

/**
 * Fetches made with a client's own key (ALLOW_CLIENT_KEYS) run in the adapter process and are never
 * queued: the key must reach no Redis record. Without a bound a client flooding with its key had as
 * many upstream calls at once as it liked, and the other clients' keys waited behind them for
 * sockets. They share ADAPTER_CLIENT_KEY_FETCHES slots: a free one goes to the waiting fetch of the
 * client with the fewest running (first come, first served among equals), and a fetch that finds no
 * slot within its wait is refused as the adapter being busy.
 *
 * A client here is its key, known only by an HMAC under a secret this process drew at start: what is
 * kept could not lead back to the key, nor be compared with another process's.
 */
export class DirectFetches {
  private readonly secret = randomBytes(32)
  private readonly running = new Map<string, number>()
  private readonly waiting: Array<{ client: string; start: () => void }> = []
  private busy = 0

  constructor(private readonly slots: number) {}

  /** Runs `fetch` in a slot of the client whose key is `key`, waiting at most `waitMs` for one. */
  async run<T>(key: string, waitMs: number, fetch: () => Promise<T>): Promise<T> {
    const client = createHmac('sha256', this.secret).update(key).digest('base64url')
    await this.slot(client, waitMs)
    try {
      return await fetch()
    } finally {
      this.release(client)
    }
  }

  /** Fetches running and waiting now (metrics, tests). */
  get counts(): { running: number; waiting: number } {
    return { running: this.busy, waiting: this.waiting.length }
  }

  private slot(client: string, waitMs: number): Promise<void> {
    if (this.busy < this.slots) {
      this.take(client)
      return Promise.resolve()
    }
    return new Promise((resolve, reject) => {
      const entry = {
        client,
        start: () => {
          clearTimeout(timer)
          this.take(client)
          resolve()
        },
      }
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(entry), 1)
        reject(
          new FeedrunnerError(
            `every one of ADAPTER_CLIENT_KEY_FETCHES (${this.slots}) fetches with a client's own key was busy for ${waitMs} ms; try again, or raise the setting`,
            {
              kind: 'unavailable',
              code: 'client_key_fetches_busy',
              bound: 'ADAPTER_CLIENT_KEY_FETCHES',
            },
          ),
        )
      }, waitMs)
      this.waiting.push(entry)
    })
  }

  private take(client: string): void {
    this.busy++
    this.running.set(client, (this.running.get(client) ?? 0) + 1)
  }

  private release(client: string): void {
    this.busy--
    const left = (this.running.get(client) ?? 1) - 1
    if (left === 0) this.running.delete(client)
    else this.running.set(client, left)
    let next = -1
    for (let index = 0; index < this.waiting.length; index++) {
      const runs = this.running.get(this.waiting[index]!.client) ?? 0
      if (next === -1 || runs < (this.running.get(this.waiting[next]!.client) ?? 0)) next = index
    }
    if (next !== -1) this.waiting.splice(next, 1)[0]!.start()
  }
}
