import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { errorKindOf, isRetryable, withContext } from '../../src/config/errors.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'
import {
  createRedisConnection,
  isRedisUnavailable,
  redisRefusal,
} from '../../src/queue/connection.ts'
import { Connections } from '../../src/queue/connections.ts'
import { untilReady } from '../support/redis.ts'

async function refusal(command: Promise<unknown>): Promise<Error> {
  return command.then(
    () => {
      throw new Error('expected Redis to refuse the command')
    },
    (error: Error) => error,
  )
}

/**
 * A Redis that is full (noeviction), read-only or loading refuses commands while its connections
 * stay up. Those refusals are Redis not taking work now, as an outage is: retried, and reported as
 * one outage. A run that met one was failed for good: its request stayed open with nothing to run it.
 */
describe('Redis refusing commands for now', () => {
  let primary: PrivateRedis | undefined
  let replica: PrivateRedis | undefined
  const opened: Redis[] = []
  const connect = async (url: string) => {
    const redis = createRedisConnection(url, 'client')
    opened.push(redis)
    await untilReady(redis)
    return redis
  }

  beforeAll(async () => {
    primary = await startPrivateRedis()
    replica = await startPrivateRedis({
      extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)],
    })
  }, 60_000)

  afterAll(async () => {
    for (const redis of opened) redis.disconnect()
    await replica?.stop()
    await primary?.stop()
  })

  it('full, read-only: unavailable and retryable, by the reply code; other errors are not', async () => {
    const redis = await connect(primary!.url)
    await redis.config('SET', 'maxmemory', '1')
    try {
      const full = await refusal(redis.set('refusals:key', 'value'))
      const fullInScript = await refusal(
        redis.eval("return redis.call('SET', KEYS[1], 'value')", 1, 'refusals:key'),
      )
      for (const error of [full, fullInScript]) {
        expect(error.message).toMatch(/^OOM /)
        expect(errorKindOf(error)).toBe('unavailable')
        expect(isRetryable(error)).toBe(true)
        expect(isRedisUnavailable(error)).toBe(true)
        // Said for what it is, also behind the error that says where it happened.
        expect(redisRefusal(withContext('handler failed for request 0x4c', error))?.doing).toBe(
          'refuses writes: its memory is full',
        )
      }
    } finally {
      await redis.config('SET', 'maxmemory', '0')
    }
    const readOnly = await refusal((await connect(replica!.url)).set('refusals:key', 'value'))
    expect(readOnly.message).toMatch(/^READONLY /)
    expect(redisRefusal(readOnly)?.doing).toBe('refuses writes: it is a read-only replica')

    expect(errorKindOf(readOnly)).toBe('unavailable')
    expect(isRedisUnavailable(readOnly)).toBe(true)

    const unknown = await refusal(redis.call('NO-SUCH-COMMAND'))
    const wrongType = await refusal(
      redis.set('refusals:list', 'x').then(() => redis.lpush('refusals:list', 'y')),
    )
    for (const error of [unknown, wrongType]) {
      expect(redisRefusal(error)).toBeUndefined()
      expect(errorKindOf(error)).toBe('internal')
      expect(isRedisUnavailable(error)).toBe(false)
    }
  })

  it('a connection lost under a command: unavailable and retryable, by what ioredis makes of it', async () => {
    const redis = await connect(primary!.url)
    const id = String(await redis.client('ID'))
    // Redis answers the kill, then closes the connection: ioredis aborts what the pipeline had left.
    const answers = await redis
      .pipeline()
      .ping()
      .client('KILL', 'ID', id, 'SKIPME', 'no')
      .ping()
      .ping()
      .exec()
    const aborted = (answers ?? []).flatMap(([error]) => (error ? [error] : []))
    expect(aborted.length).toBeGreaterThan(0)
    const closedByHand = createRedisConnection(primary!.url, 'client')
    opened.push(closedByHand)
    await untilReady(closedByHand)
    closedByHand.disconnect()
    const closed = await refusal(closedByHand.get('refusals:key'))
    for (const error of [...aborted, closed]) {
      expect(errorKindOf(error), error.message).toBe('unavailable')
      expect(isRetryable(error)).toBe(true)
      // Also behind the error that says where it happened (a run's task, the sender's write).
      expect(isRedisUnavailable(withContext('task submit_tx', error))).toBe(true)
      expect(errorKindOf(withContext('task submit_tx', error))).toBe('unavailable')
    }
    // Told by what the error is, not by words: a bridge's failure that says "connect" is not Redis.
    for (const words of [
      'bridge: could not connect to the adapter',
      'Command aborted due to connection close',
    ]) {
      expect(isRedisUnavailable(new Error(words))).toBe(false)
      expect(errorKindOf(new Error(words))).toBe('internal')
    }
  })

  it('a Redis full for a while is one outage: down once, back once its writes pass again', async () => {
    const lines: Array<{ level: string; state?: unknown; message: string }> = []
    const at = (level: string) => (fields: Record<string, unknown>, message: string) =>
      void lines.push({ level, state: fields.state, message })
    const connections = new Connections(
      { REDIS_URL: primary!.url, OUTAGE_REPORT_INTERVAL_MS: 60_000, QUEUE_PREFIX: 'refusals' },
      { warn: at('warn'), info: at('info'), error: at('error') },
    )
    const admin = await connect(primary!.url)
    try {
      const writer = connections.redis('client', 'writer')
      await untilReady(writer)
      await admin.config('SET', 'maxmemory', '1')
      // Calls fail as a part's calls would, each reported to the connections' one handler.
      for (let call = 0; call < 5; call++)
        connections.reportError(await refusal(writer.set('refusals:key', 'value')), 'writer')
      const states = () => lines.filter((line) => line.state !== undefined)
      expect(states().map((line) => [line.level, line.state])).toEqual([['warn', 'down']])
      expect(states()[0]!.message).toBe(
        `Redis refuses writes: its memory is full (REDIS_URL 127.0.0.1:${primary!.port}): OOM command not allowed when used memory > 'maxmemory'; raise its maxmemory or free memory (feedrunner retries meanwhile; docs/operating.md)`,
      )
      expect(lines.filter((line) => line.level === 'error')).toEqual([])

      await admin.config('SET', 'maxmemory', '0')
      await waitFor('the line that Redis is back', async () => states().length > 1, 30_000)
      expect(states().map((line) => [line.level, line.state])).toEqual([
        ['warn', 'down'],
        ['info', 'up'],
      ])
      expect(await writer.set('refusals:key', 'value')).toBe('OK')
    } finally {
      await admin.config('SET', 'maxmemory', '0')
      await connections.close()
    }
  }, 60_000)
})
