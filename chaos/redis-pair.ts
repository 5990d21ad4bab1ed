import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { startPrivateRedis, type PrivateRedis } from '../src/dev/redis.ts'
import { waitFor } from '../src/dev/process.ts'
import { startTcpProxy, type TcpProxy } from '../test/support/tcp-proxy.ts'
import type { Signal } from './schedule.ts'

/**
 * The stack's Redis: a primary with an append-only file (a restart keeps what it had written), a
 * replica of it, and a TCP proxy in front that every process connects to, so the primary can be
 * restarted, flushed, or replaced by its promoted replica behind one address.
 */
export class RedisPair {
  private constructor(
    private primary: PrivateRedis,
    private primaryDir: string,
    private replica: PrivateRedis | undefined,
    private readonly proxy: TcpProxy,
  ) {}

  static async start(): Promise<RedisPair> {
    const dir = mkdtempSync(join(tmpdir(), 'feedrunner-chaos-redis-'))
    const primary = await startPrivateRedis({ persistDir: dir })
    const proxy = await startTcpProxy(primary.port)
    const pair = new RedisPair(primary, dir, undefined, proxy)
    pair.replica = await startReplicaOf(primary)
    return pair
  }

  /** What the processes are given as REDIS_URL. */
  get url(): string {
    return `redis://127.0.0.1:${this.proxy.port}`
  }

  /** The primary itself, for the harness's own reads (not through the proxy, which faults cut). */
  get directUrl(): string {
    return this.primary.url
  }

  /** Stops the primary with `signal`, leaves it down for `downMs`, starts it again on its port and file. */
  async restart(signal: Signal, downMs: number): Promise<void> {
    const { port } = this.primary
    await this.primary.process.stop(signal)
    await delay(downMs)
    this.primary = await startPrivateRedis({ port, persistDir: this.primaryDir })
  }

  async flush(): Promise<void> {
    const client = new Redis(this.primary.url, { maxRetriesPerRequest: 1, lazyConnect: true })
    try {
      await client.connect()
      await client.flushall()
    } finally {
      client.disconnect()
    }
  }

  /**
   * A failover: the replica (as far as it had caught up) is promoted with REPLICAOF NO ONE, the old
   * primary is killed, and the proxy sends every connection to the new primary. A fresh replica of
   * the new primary is started for the next failover.
   */
  async failover(): Promise<void> {
    const promoted = this.replica ?? (await startReplicaOf(this.primary))
    const client = new Redis(promoted.url, { maxRetriesPerRequest: 1, lazyConnect: true })
    try {
      await client.connect()
      await client.call('REPLICAOF', 'NO', 'ONE')
      // As the primary it replaces: a restart keeps what it wrote.
      await client.config('SET', 'appendonly', 'yes')
    } finally {
      client.disconnect()
    }
    const old = this.primary
    await old.process.stop('SIGKILL')
    rmSync(this.primaryDir, { recursive: true, force: true })
    this.primary = promoted
    this.primaryDir = promoted.dir
    this.proxy.retarget(promoted.port)
    this.replica = await startReplicaOf(promoted)
  }

  async stop(): Promise<void> {
    await this.proxy.close()
    await this.replica?.stop()
    await this.primary.process.stop()
    rmSync(this.primaryDir, { recursive: true, force: true })
  }
}

/** A replica of `primary`, once its first sync is done. */
async function startReplicaOf(primary: PrivateRedis): Promise<PrivateRedis> {
  const replica = await startPrivateRedis({
    extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)],
  })
  const client = new Redis(replica.url, { maxRetriesPerRequest: 1 })
  try {
    await waitFor(
      `redis replica on ${replica.url} in sync`,
      async () => /master_link_status:up/.test(await client.info('replication')),
      20_000,
      100,
    )
  } finally {
    client.disconnect()
  }
  return replica
}
