import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'

/**
 * A random value every runner of an installation writes once and reads back: when it is gone (a
 * FLUSHALL, an empty Redis put in place, a failover to a replica that never had it) or changed (another
 * runner noticed first and wrote a new one), Redis lost what it held and the runners rebuild from the
 * chain.
 */
export class RedisGeneration {
  private known: string | undefined

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
  ) {}

  /** Writes a generation when there is none and remembers the one in force. */
  async adopt(): Promise<string> {
    await this.redis.set(this.key, randomUUID(), 'NX')
    const current = await this.redis.get(this.key)
    if (!current) throw new Error(`Redis did not keep ${this.key}`)
    this.known = current
    return current
  }

  /**
   * Whether the generation vanished or changed since it was adopted. It is not adopted here: the
   * runner adopts the new one only once its rebuild succeeded, so a rebuild that fails is tried again.
   */
  async lost(): Promise<boolean> {
    const current = await this.redis.get(this.key)
    return current === null || current !== this.known
  }
}
