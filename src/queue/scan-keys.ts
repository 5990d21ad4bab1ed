import { Cluster, type Redis } from 'ioredis'
import { FeedrunnerError } from '../config/errors.ts'

/** How many keys each SCAN call asks a node to look at, and how many keys to answer at most. */
export interface ScanOptions {
  /** SCAN's COUNT hint (500 unless told). */
  count?: number
  /** Stop once this many distinct keys are found (all of them unless told). */
  limit?: number
}

/**
 * The nodes whose keys make up the keyspace: a plain Redis itself, a Redis Cluster's masters.
 *
 * SCAN names no key, so an ioredis Cluster sends it to one node it picks at random (and each call of
 * a cursor loop to a possibly different one): it lists that node's keys only, and a cursor that
 * node never issued. Each master holds its own slots' keys (replicas copy them), so a listing scans
 * every master with its own cursor. A cluster not ready yet knows no masters: a keyless command
 * waits for it (or fails, on a connection without an offline queue, as any other command would).
 */
export async function keyspaceNodes(redis: Redis | Cluster): Promise<Redis[]> {
  if (!(redis instanceof Cluster)) return [redis]
  if (redis.status !== 'ready') await redis.ping()
  const masters = redis.nodes('master')
  if (masters.length === 0)
    throw new FeedrunnerError(
      'the Redis Cluster named no master to scan: check REDIS_URL and that the cluster is up (redis-cli cluster info)',
      { kind: 'unavailable' },
    )
  return masters
}

/**
 * The keys matching `pattern` (a SCAN MATCH pattern), one SCAN reply at a time, on a plain Redis or
 * on every master of a Redis Cluster (feedrunner hands a Cluster out typed as a Redis). SCAN may
 * answer a key twice; empty replies are skipped. A batch comes from one node, so on a cluster its
 * keys share a slot only when the pattern's keys do (a hash-tagged prefix).
 */
export async function* scanKeyBatches(
  redis: Redis | Cluster,
  pattern: string,
  count = 500,
): AsyncGenerator<string[], void, undefined> {
  for (const node of await keyspaceNodes(redis)) {
    let cursor = '0'
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count)
      cursor = next
      if (keys.length > 0) yield keys
    } while (cursor !== '0')
  }
}

/**
 * The distinct keys matching `pattern`, in the order SCAN found them, at most `limit` (scanning
 * stops at the reply that reaches it). See scanKeyBatches for a cluster.
 */
export async function scanKeys(
  redis: Redis | Cluster,
  pattern: string,
  { count = 500, limit = Number.POSITIVE_INFINITY }: ScanOptions = {},
): Promise<string[]> {
  const found = new Set<string>()
  for await (const keys of scanKeyBatches(redis, pattern, count)) {
    for (const key of keys) found.add(key)
    if (found.size >= limit) break
  }
  return [...found].slice(0, limit)
}
