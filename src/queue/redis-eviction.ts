import type { Redis } from 'ioredis'
import type { OutageLog } from '../config/dependency-health.ts'
import { endpointOf } from '../config/settings.ts'
import { keyspaceNodes } from './scan-keys.ts'

/** How often the watch reads the policy again between reconnects (CONFIG SET changes it live). */
const RECHECK_MS = 10 * 60_000

/** What a Redis server says of its memory limit and what it drops when it reaches it. */
export interface RedisEviction {
  /** `maxmemory` in bytes; 0 is no limit, so nothing is ever evicted. */
  maxmemory: number
  /** `maxmemory_human` (`64.00M`), else the bytes. */
  limit: string
  /** `maxmemory_policy` as Redis words it (`noeviction`, `allkeys-lru`, `volatile-ttl`, ...). */
  policy: string
}

/** The eviction fields of `INFO memory`; undefined when the answer has neither. */
export function evictionOf(info: string): RedisEviction | undefined {
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim()
  const policy = field('maxmemory_policy')
  const maxmemory = Number(field('maxmemory'))
  if (policy === undefined || !Number.isFinite(maxmemory)) return undefined
  return { maxmemory, limit: field('maxmemory_human') ?? `${maxmemory} bytes`, policy }
}

/** Whether the server may drop keys: it has a limit, and a policy other than refusing writes. */
export function evicts(eviction: RedisEviction): boolean {
  return eviction.maxmemory > 0 && eviction.policy !== 'noeviction'
}

export interface RedisEvictionWatchOptions {
  /** REDIS_URL, to name the server (host and port only) in what it says. */
  redisUrl: string
  log: OutageLog
}

/**
 * Says when the Redis behind REDIS_URL may evict feedrunner's keys, once, and once when it no longer
 * may. Everything feedrunner keeps there must stay until it is done with it: an evicted `requests`
 * job or run record is a request forgotten until a runner's next start reads the chain again, and an
 * evicted part of a BullMQ job breaks that job. BullMQ prints a raw line of its own for each
 * connection it opens (32 in one `dev` process), whatever the limit; this reads the policy with the
 * limit, on each (re)connect and every 10 minutes, from every master of a Redis Cluster.
 */
export class RedisEvictionWatch {
  /** The servers found evicting at the last reading, by endpoint. */
  private readonly evicting = new Set<string>()
  private timer: NodeJS.Timeout | undefined
  private checking: Promise<void> | undefined
  private readonly onReady = () => void this.check()

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisEvictionWatchOptions,
  ) {}

  start(): this {
    this.redis.on('ready', this.onReady)
    this.timer = setInterval(this.onReady, RECHECK_MS)
    this.timer.unref()
    if (this.redis.status === 'ready') this.onReady()
    return this
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
    this.redis.off('ready', this.onReady)
  }

  /** Reads every server's policy once (a reading already under way is joined) and says changes. */
  check(): Promise<void> {
    this.checking ??= this.readAll().finally(() => (this.checking = undefined))
    return this.checking
  }

  private async readAll(): Promise<void> {
    let nodes: Redis[]
    try {
      nodes = await keyspaceNodes(this.redis)
    } catch {
      return // a Redis that does not answer is the outage report's
    }
    const cluster = nodes.length !== 1 || nodes[0] !== this.redis
    for (const node of nodes) {
      const where = cluster
        ? `Redis node ${node.options.host}:${node.options.port} of REDIS_URL`
        : `Redis at REDIS_URL ${endpointOf(this.options.redisUrl)}`
      try {
        const eviction = evictionOf(await node.info('memory'))
        if (eviction) this.report(where, eviction)
      } catch {
        // Unanswered: the outage report's. Refused (a managed Redis may rename INFO): nothing to tell.
      }
    }
  }

  private report(where: string, eviction: RedisEviction): void {
    const now = evicts(eviction)
    if (now === this.evicting.has(where)) return
    const fields = { redisMaxmemory: eviction.maxmemory, redisMaxmemoryPolicy: eviction.policy }
    if (now) {
      this.evicting.add(where)
      this.options.log.warn(
        fields,
        `${where} evicts keys when its memory is full (maxmemory ${eviction.limit}, ` +
          `maxmemory-policy ${eviction.policy}): an evicted queued request or run record is forgotten ` +
          `until a runner's next start reads the chain again, and an evicted part of a queue job breaks ` +
          `it; set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction) ` +
          `and give Redis the memory feedrunner keeps (docs/operating.md)`,
      )
    } else {
      this.evicting.delete(where)
      this.options.log.info(
        fields,
        `${where} no longer evicts keys (maxmemory-policy ${eviction.policy})`,
      )
    }
  }
}
