import { Worker } from 'bullmq'
import type { RedisOptions, Redis } from 'ioredis'
import {
  DependencyHealth,
  reasonOf,
  type DependencyHealthOptions,
  type OutageLog,
} from '../config/dependency-health.ts'
import { DEFAULT_SETTINGS, type Settings } from '../config/settings.ts'
import {
  createRedisConnection,
  isRedisUnavailable,
  redisRefusal,
  type ConnectionRole,
} from './connection.ts'
import { RedisClock } from './redis-clock.ts'
import { RedisEvictionWatch } from './redis-eviction.ts'
import { LostLocks } from './lost-locks.ts'

/** Something that reports failures as 'error' events: an ioredis connection, a BullMQ queue or worker. */
interface ErrorEmitter {
  on(event: 'error', listener: (error: Error) => void): unknown
}

/** The log calls the connections make (a pino Logger fits). */
export interface ConnectionLog extends OutageLog {
  error(fields: Record<string, unknown>, message: string): void
  debug?(fields: Record<string, unknown>, message: string): void
}

interface Opened {
  name: string
  close(): Promise<void> | void
}

export type ConnectionSettings = Pick<Settings, 'REDIS_URL' | 'OUTAGE_REPORT_INTERVAL_MS'> &
  Partial<Pick<Settings, 'QUEUE_PREFIX'>>

export interface ConnectionsOptions {
  /** The clock of the outage reports (Date.now unless a test says otherwise). */
  now?: () => number
  /**
   * Whether to say when this Redis may evict keys (default true): feedrunner's queues and records
   * must stay, but a response cache of its own (CACHE_REDIS_URL) may evict as any cache does.
   */
  watchEviction?: boolean
}

/**
 * Every connection of one process, opened in its composition root (src/cli/) and handed to the parts
 * that need it: Redis connections for commands and for BullMQ's blocking workers, and the health of
 * every other dependency (RPC nodes, the feed service, bridges). Each connection has one error
 * handler, which reports an outage as state changes (DependencyHealth) instead of swallowing it;
 * `close()` closes everything in reverse order of opening.
 */
export class Connections {
  readonly redisHealth: DependencyHealth
  private readonly opened: Opened[] = []
  private readonly dependencies = new Map<string, DependencyHealth>()
  private sources = 0
  private readonly clocks = new Map<string, RedisClock>()
  /** Opened with the first Redis connection: the eviction watch's, and the write probe's. */
  private serverConnection: Redis | undefined
  private serverWatched = false
  private closing: Promise<void> | undefined

  constructor(
    private readonly settings: ConnectionSettings,
    private readonly logger: ConnectionLog,
    private readonly options: ConnectionsOptions = {},
  ) {
    this.redisHealth = this.dependency('Redis', 'REDIS_URL', settings.REDIS_URL, {
      probe: () => this.probeWrites(),
      refusal: redisRefusal,
    })
  }

  /**
   * A Redis connection (see ConnectionRole); `name` says what it is for in logs. It reconnects by
   * itself while Redis is away; its errors feed the Redis outage report.
   */
  redis(role: ConnectionRole, name: string, options: RedisOptions = {}): Redis {
    const connection = createRedisConnection(this.settings.REDIS_URL, role, options)
    const source = `${name}#${++this.sources}`
    // A command that this process's own close cut short (the connection's ready check, a blocking
    // read) fails with "Stream isn't writeable" or "Connection is closed": no news of Redis. A refused
    // start and every Ctrl-C said "Redis is not answering" while Redis was up.
    let closedHere = false
    const disconnect = connection.disconnect.bind(connection)
    connection.disconnect = (reconnect = false) => {
      closedHere ||= !reconnect
      disconnect(reconnect)
    }
    connection.on('error', (error) => {
      if (!closedHere) this.reportError(error, name, source)
    })
    connection.on('ready', () => this.redisHealth.answered(source))
    this.opened.push({
      name,
      close: () => {
        connection.disconnect()
        this.redisHealth.forget(source)
      },
    })
    if (!this.serverWatched) {
      // One more connection, for what this process asks of the server itself (below).
      this.serverWatched = true
      const server = this.redis('client', 'Redis server watch')
      this.serverConnection = server
      if (this.options.watchEviction !== false) {
        const watch = new RedisEvictionWatch(server, {
          redisUrl: this.settings.REDIS_URL,
          log: this.logger,
        }).start()
        this.onClose('Redis eviction watch', () => watch.stop())
      }
    }
    return connection
  }

  /**
   * While Redis is reported down: whether it takes a write again. A Redis that is full (OOM), read-
   * only or loading refuses writes while its connections stay up, so no connection's `ready` ends
   * that outage; this does, once a write would pass. `SET ... XX` of a key that is never there
   * writes nothing, and Redis refuses it as it refuses any write. In a Redis Cluster the key is in
   * QUEUE_PREFIX's slot, where feedrunner's keys are.
   */
  private async probeWrites(): Promise<void> {
    const connection = this.serverConnection
    if (!connection) throw new Error('no Redis connection yet')
    const prefix = this.settings.QUEUE_PREFIX ?? DEFAULT_SETTINGS.QUEUE_PREFIX
    await connection.set(`${prefix}:write-probe`, '1', 'XX')
  }

  /**
   * The one error handler of a BullMQ queue, worker or queue-events object (they repeat the errors of
   * their connections, including the copies BullMQ makes for blocking reads): an unreachable Redis
   * counts towards the outage report; a worker's lapsed lock is counted and logged at debug
   * (LostLocks); anything else is logged, one line, as what `name` says.
   */
  watch<T extends ErrorEmitter>(emitter: T, name: string): T {
    const lostLocks = emitter instanceof Worker ? new LostLocks(emitter) : undefined
    emitter.on('error', (error) => {
      if (!lostLocks?.tells(error)) return this.reportError(error, name)
      if (!this.closing) this.logger.debug?.(...errorLine(error, name))
    })
    return emitter
  }

  /**
   * Redis's clock for this process (one per QUEUE_PREFIX, on a connection of its own): for times one
   * process writes and another compares, which host clocks cannot be trusted with.
   */
  clock(prefix: string): RedisClock {
    let clock = this.clocks.get(prefix)
    if (!clock) {
      const started = new RedisClock(this.redis('client', 'Redis clock'), {
        slotKey: `${prefix}:clock`,
        log: this.logger,
      }).start()
      this.onClose('Redis clock', () => started.stop())
      this.clocks.set(prefix, started)
      clock = started
    }
    return clock
  }

  /** The outage reporter of a dependency other than Redis (one per setting: RPC_URL, SPORTS_URL, ...). */
  dependency(
    name: string,
    setting: string,
    url: string,
    more: Pick<DependencyHealthOptions, 'probe' | 'refusal'> = {},
  ): DependencyHealth {
    const key = `${setting} ${url}`
    let health = this.dependencies.get(key)
    if (!health) {
      health = new DependencyHealth({
        dependency: name,
        setting,
        url,
        log: this.logger,
        reportEveryMs: this.settings.OUTAGE_REPORT_INTERVAL_MS,
        ...(this.options.now ? { now: this.options.now } : {}),
        ...more,
      })
      this.dependencies.set(key, health)
    }
    return health
  }

  /** Registers something else to close with the connections (a JSON-RPC provider, say). */
  onClose(name: string, close: () => Promise<void> | void): void {
    this.opened.push({ name, close })
  }

  /** Closes everything, newest first; a close that fails is logged and the rest still close. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const opened of this.opened.splice(0).reverse()) {
        try {
          await opened.close()
        } catch (error) {
          this.logger.warn({ connection: opened.name, err: reasonOf(error) }, 'close failed')
        }
      }
      for (const health of this.dependencies.values()) health.close()
    })()
    return this.closing
  }

  /** While a dependency stays down, one line this often (OUTAGE_REPORT_INTERVAL_MS). */
  get outageReportEveryMs(): number {
    return this.settings.OUTAGE_REPORT_INTERVAL_MS
  }

  /** The Redis URL this process uses (for parts that must tell a Redis error from another). */
  get redisUrl(): string {
    return this.settings.REDIS_URL
  }

  /** What `watch` does with an error, for a part that has its own error callback. */
  reportError(error: Error, name: string, source?: string): void {
    if (this.closing) return
    if (isRedisUnavailable(error)) this.redisHealth.failed(error, source)
    else this.logger.error(...errorLine(error, name))
  }
}

/** A connection's error as one log line: its fields and its message, named by what it is for. */
function errorLine(error: Error, name: string): [Record<string, unknown>, string] {
  const reason = reasonOf(error)
  return [{ connection: name, err: reason }, `${name}: ${reason}`]
}
