import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { closeHandler } from 'ioredis/built/redis/event_handler.js'
import { reasonOf, type Refusal } from '../config/dependency-health.ts'
import {
  errorKindOf,
  FeedrunnerError,
  isRedisConnectionLoss,
  redisReplyCode,
} from '../config/errors.ts'
import { endpointOf } from '../config/settings.ts'

/**
 * ioredis 5 whose `disconnect()` also ends a connection that is waiting to reconnect.
 *
 * ioredis clears the retry timer but, with no socket left to close, never emits `end` nor rejects the
 * commands it holds (redis/ioredis#2169). BullMQ's `Worker.close()` waits for that `end` on its
 * blocking connection (taskforcesh/bullmq#4656), so a worker closed while Redis was away, or in the
 * second after it came back, never closed and its process hung on shutdown. Ending the connection
 * the way ioredis ends a manual close sets `end` and rejects the held commands.
 */
class EndableRedis extends Redis {
  override disconnect(reconnect = false): void {
    const waitingToReconnect = !reconnect && this.status === 'reconnecting'
    super.disconnect(reconnect)
    if (waitingToReconnect && this.status === 'reconnecting') closeHandler(this)()
  }

  // BullMQ duplicates the connection it is given for its blocking commands: the copy must end too,
  // and it does not auto-pipeline (it only ever holds one blocking command).
  override duplicate(override?: Partial<RedisOptions>): Redis {
    return new EndableRedis({ ...this.options, enableAutoPipelining: false, ...override })
  }
}

/**
 * How a connection behaves while Redis is away:
 * - `worker`: blocking commands; waits and reconnects forever (BullMQ requires maxRetriesPerRequest null).
 * - `client`: answers a caller; fails fast instead of queueing commands, so an HTTP request gets a 503
 *   rather than hanging until Redis returns.
 */
export type ConnectionRole = 'worker' | 'client'

export function createRedisConnection(
  redisUrl: string,
  role: ConnectionRole,
  options: RedisOptions = {},
): Redis {
  const base: RedisOptions = {
    maxRetriesPerRequest: role === 'worker' ? null : 1,
    enableOfflineQueue: role === 'worker',
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    lazyConnect: false,
  }
  const cluster = clusterOfUrl(redisUrl)
  if (cluster) return createClusterConnection(cluster, { ...base, ...options })
  return new EndableRedis(redisUrl, { ...base, ...options })
}

/** A Redis Cluster's entry nodes and credentials, from a `redis+cluster://` URL. */
export interface ClusterUrl {
  nodes: Array<{ host: string; port: number }>
  username?: string
  password?: string
}

const CLUSTER_URL = /^redis\+cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#@]+)\/?$/

/**
 * `redis+cluster://[user:password@]host:port[,host:port...]`: a Redis Cluster, reached through any
 * of the listed nodes (ioredis discovers the others). Undefined for any other URL; throws, naming
 * REDIS_URL, for a cluster URL it cannot read.
 */
export function clusterOfUrl(redisUrl: string): ClusterUrl | undefined {
  if (!redisUrl.startsWith('redis+cluster://')) return undefined
  const match = CLUSTER_URL.exec(redisUrl)
  const nodes = (match?.[3] ?? '').split(',').map((node) => {
    const [, host, port] = /^\[?([^\]]*?)\]?:(\d+)$/.exec(node.trim()) ?? []
    return { host: host ?? '', port: Number(port) }
  })
  if (!match || nodes.some((node) => node.host === '' || !(node.port > 0 && node.port < 65536)))
    throw new FeedrunnerError(
      'REDIS_URL: expected redis+cluster://[user:password@]host:port[,host:port...] (a cluster URL names each node with its port)',
      { kind: 'config' },
    )
  const decode = (part: string | undefined) =>
    part === undefined || part === '' ? undefined : decodeURIComponent(part)
  return { nodes, username: decode(match[1]), password: decode(match[2]) }
}

/**
 * An ioredis Cluster with the role's behaviour: per-node options go into `redisOptions` (where BullMQ
 * reads maxRetriesPerRequest), the offline queue and the reconnect pacing onto the cluster itself.
 * BullMQ takes a Cluster wherever it takes a Redis, and a Cluster answers every command feedrunner
 * sends (both are ioredis Commanders); feedrunner is typed against Redis, so the cluster is handed
 * out as one. Every key of a queue must share a hash slot there: QUEUE_PREFIX carries a hash tag
 * (`{feedrunner}` by default), and every feedrunner key starts with it.
 */
function createClusterConnection(cluster: ClusterUrl, options: RedisOptions): Redis {
  const { enableOfflineQueue, retryStrategy, lazyConnect, enableAutoPipelining, ...nodeOptions } =
    options
  const connection = new Cluster(cluster.nodes, {
    redisOptions: { ...nodeOptions, username: cluster.username, password: cluster.password },
    enableOfflineQueue,
    lazyConnect,
    enableAutoPipelining,
    clusterRetryStrategy: (attempt) => retryStrategy?.(attempt) ?? null,
  })
  return connection as unknown as Redis
}

/** Socket error codes of a Redis that went away (a reset connection is as much an outage as a refused one). */
const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
])

/**
 * True when the error says Redis could not be reached, or answered that it cannot take commands now
 * (full, read-only, loading: an error reply of a kind errorKindOf calls `unavailable`), as opposed to
 * a command error.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (redisReplyCode(error) !== undefined) return errorKindOf(error) === 'unavailable'
  // Also behind the errors that say where it happened (a listener's handler, a task).
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 5; depth++) {
    const code = (at as NodeJS.ErrnoException).code
    if (code !== undefined && UNREACHABLE_CODES.has(code)) return true
    if (isRedisConnectionLoss(at)) return true
    at = at.cause
  }
  return false
}

/**
 * What a Redis that refuses commands for now does, and the remedy, for its outage line: a full or
 * read-only Redis answers, so "not answering" would send the operator to the wrong place.
 */
export function redisRefusal(error: unknown): Refusal | undefined {
  switch (redisReplyCode(error)) {
    case 'OOM':
      return {
        doing: 'refuses writes: its memory is full',
        remedy:
          'raise its maxmemory or free memory (feedrunner retries meanwhile; docs/operating.md)',
      }
    case 'READONLY':
      return {
        doing: 'refuses writes: it is a read-only replica',
        remedy: 'point REDIS_URL at the primary (after a failover, the promoted replica)',
      }
    case 'LOADING':
      return { doing: 'is loading its data', remedy: 'it answers once loaded' }
    default:
      return undefined
  }
}

/**
 * A `client` connection that is ready to take commands, for one-shot callers (CLI commands): a
 * fail-fast connection refuses commands sent before it has connected. The message of a Redis that
 * does not answer names REDIS_URL's host and port (never its password) and why.
 */
export async function connectClient(redisUrl: string, timeoutMs = 3_000): Promise<Redis> {
  const redis = createRedisConnection(redisUrl, 'client', {
    lazyConnect: true,
    retryStrategy: () => null,
  })
  // A failed connect rejects connect() below; this keeps the same error from also being printed as
  // an unhandled 'error' event, and keeps its reason for the message.
  let lastError: unknown
  redis.on('error', (error) => (lastError = error))
  const timer = setTimeout(() => redis.disconnect(), timeoutMs)
  try {
    await redis.connect()
    return redis
  } catch (error) {
    redis.disconnect()
    throw new FeedrunnerError(
      `Redis does not answer at REDIS_URL ${endpointOf(redisUrl)} (${reasonOf(lastError ?? error)}); start it, or set REDIS_URL to one that runs`,
      // The socket's error (ECONNREFUSED, ...) is the cause: connect() itself says "Connection is closed".
      { kind: 'unavailable', cause: lastError ?? error },
    )
  } finally {
    clearTimeout(timer)
  }
}
