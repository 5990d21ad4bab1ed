import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'

/**
 * A random value every runner of an installation writes once and reads back: when it is gone (a
 * FLUSHALL, an empty Redis put in place, a failover to a replica that never had it) or changed (another
 * runner noticed first and wrote a new one), Redis lost what it held and the runners rebuild from the
 * chain.
 *
 * A loss can also spare the generation: a failover to a replica that had it but not the last writes
 * (replication is asynchronous; a replica still resyncing after its primary restarted holds what it
 * had before), or a restart after a crash that the append-only file outran by a second. What was
 * written last (requests just taken in, their queue jobs) is gone, and nothing says so but the server:
 * another server answers. So after each reconnection the server's `run_id` is compared with the one
 * seen when the generation was adopted; another one counts as a loss too (a rebuild from the chain
 * delivers only requests still open and not recorded, so one after a harmless restart costs reads, not
 * runs). A Redis Cluster answers INFO from any node: there the generation alone is read.
 */
export class RedisGeneration {
  private known: string | undefined
  private knownServer: string | undefined
  private reconnected = false

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
  ) {
    redis.on('ready', () => {
      if (this.knownServer !== undefined) this.reconnected = true
    })
  }

  /** Writes a generation when there is none and remembers the one in force, and the server's. */
  async adopt(): Promise<string> {
    await this.redis.set(this.key, randomUUID(), 'NX')
    const current = await this.redis.get(this.key)
    if (!current) throw new Error(`Redis did not keep ${this.key}`)
    this.known = current
    this.knownServer = await this.serverRunId()
    this.reconnected = false
    return current
  }

  /**
   * What was lost since the generation was adopted: `gone` when the generation vanished or changed,
   * `other-server` when it stands but another server answers since a reconnection; undefined when
   * nothing was. It is not adopted here: the runner adopts the new one only once its rebuild
   * succeeded, so a rebuild that fails is tried again.
   */
  async loss(): Promise<'gone' | 'other-server' | undefined> {
    const current = await this.redis.get(this.key)
    if (current === null || current !== this.known) return 'gone'
    if (!this.reconnected) return undefined
    const server = await this.serverRunId()
    if (server === this.knownServer) {
      this.reconnected = false
      return undefined
    }
    return 'other-server'
  }

  /** The answering server's run_id (a new one at each start, and on the replica a failover promotes). */
  private async serverRunId(): Promise<string | undefined> {
    if (this.redis.isCluster) return undefined
    return /^run_id:(\w+)/m.exec(await this.redis.info('server'))?.[1]
  }
}
