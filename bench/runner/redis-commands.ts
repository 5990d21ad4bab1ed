/**
 * Where a phase's Redis commands go. By command name from `INFO commandstats` (free: two reads per
 * phase), and, with BENCH_REDIS_SOURCES=1, by what sent them, from a MONITOR connection that reads
 * every command's keys (it costs Redis CPU, so the CPU figures of such a run are not comparable).
 * Both count a Lua script as one command plus each command it runs (`INFO commandstats` counts the
 * commands a script calls too).
 */
import { Redis } from 'ioredis'

/** Calls so far of each command the server has run (INFO commandstats), by lower-case name. */
export async function redisCommandStats(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats')
  const calls: Record<string, number> = {}
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls[(match[1] as string).toLowerCase()] = Number(match[2])
  return calls
}

/** All commands of a `redisCommandStats` answer. */
export function totalCalls(calls: Record<string, number>): number {
  return Object.values(calls).reduce((sum, value) => sum + value, 0)
}

/**
 * What a key belongs to, by its first part after the queue prefix: the `requests` BullMQ queue, a
 * fetch queue, run records (`runner:`), the sender's transaction store and key leases (`txstate:`),
 * the listener's checkpoints, the recovery generation.
 */
export function sourceOfKey(key: string): string {
  const part = key.slice(key.indexOf(':') + 1).split(':')[0] ?? ''
  if (part === 'requests' || part.startsWith('requests-')) return 'requests job (BullMQ)'
  if (part.startsWith('fetch-')) return 'fetch jobs (BullMQ)'
  if (part === 'runner') return 'run records'
  if (part === 'txstate') return 'sender transaction store'
  if (part === 'listener') return 'listener checkpoints'
  if (part === 'generation') return 'recovery generation'
  return `other (${part})`
}

/** Commands that name no key, by what they are for. */
function sourceOfKeyless(command: string): string {
  if (command === 'xread') return 'event readers (QueueEvents)'
  if (command === 'bzpopmin') return 'worker waits'
  return 'connections (info, client, ping)'
}

/**
 * Counts every command Redis runs by source while it is open; a script's calls count to the script's.
 * Also sums the bytes of the arguments clients sent, by source (a script's own calls send nothing):
 * what the client encodes and writes, and Redis reads and parses, for each request.
 */
export class RedisSourceTap {
  private readonly counts = new Map<string, number>()
  private readonly bytes = new Map<string, number>()
  private monitor: Awaited<ReturnType<Redis['monitor']>> | undefined
  private scriptSource = 'other'

  async start(url: string): Promise<void> {
    const connection = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: true })
    this.monitor = await connection.monitor()
    this.monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const command = (args[0] ?? '').toLowerCase()
      let where: string
      if (source === 'lua') where = this.scriptSource
      else if (command === 'eval' || command === 'evalsha') {
        const keyCount = Number(args[2])
        where = keyCount > 0 ? sourceOfKey(args[3] ?? '') : 'other'
        this.scriptSource = where
      } else if (args.length > 1 && (args[1] ?? '').includes(':')) where = sourceOfKey(args[1]!)
      else where = sourceOfKeyless(command)
      this.counts.set(where, (this.counts.get(where) ?? 0) + 1)
      if (source !== 'lua') {
        const sent = args.reduce((sum, arg) => sum + Buffer.byteLength(arg), 0)
        this.bytes.set(where, (this.bytes.get(where) ?? 0) + sent)
      }
    })
  }

  /** Counts so far, by source. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.counts)
  }

  /** Argument bytes sent so far, by source. */
  bytesSnapshot(): Record<string, number> {
    return Object.fromEntries(this.bytes)
  }

  stop(): void {
    this.monitor?.disconnect()
  }
}
